"""The Timeline reference app (/apps/timeline/) in headless Chromium: two people sign up, one shares
photos (uploaded to files, then posted), the other finds and follows her, sees her posts in the
timeline, likes and comments live; she deletes a post and it leaves both the timeline and the files."""

import struct
import uuid
import zlib

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20


def wait(driver, condition, message):
    return WebDriverWait(driver, WAIT).until(lambda d: condition(d), message)


def png(path, color):
    raw = b''.join(b'\x00' + bytes(color) * 64 for _ in range(64))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    path.write_bytes(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 64, 64, 8, 2, 0, 0, 0))
                     + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))
    return str(path)


class Person:
    def __init__(self, driver, url, name):
        self.driver, self.name = driver, name
        driver.switch_to.new_window('window')
        self.handle = driver.current_window_handle
        driver.get(url)
        driver.execute_script('localStorage.clear()')  # two people in one browser: no shared session
        driver.get(url)

    def focus(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def sign_up(self):
        d = self.focus()
        wait(d, lambda d: d.find_element(By.ID, 'auth-form').is_displayed(), 'the sign-up form')
        d.find_element(By.CSS_SELECTOR, '[data-mode=up]').click()
        form = d.find_element(By.ID, 'auth-form')
        form.find_element(By.NAME, 'email').send_keys(f'{self.name}-{uuid.uuid4().hex[:6]}@example.com')
        form.find_element(By.NAME, 'password').send_keys('secret-123')
        form.find_element(By.NAME, 'username').send_keys(self.name)
        form.find_element(By.NAME, 'bio').send_keys(f'I am {self.name}')
        d.find_element(By.ID, 'auth-submit').click()
        wait(d, lambda d: d.find_element(By.ID, 'timeline-view').is_displayed(), f'{self.name} sees the timeline')

    def share(self, photo, caption):
        d = self.focus()
        d.find_element(By.ID, 'new-post').click()
        form = d.find_element(By.ID, 'new-form')
        form.find_element(By.NAME, 'photo').send_keys(photo)
        form.find_element(By.NAME, 'caption').send_keys(caption)
        d.find_element(By.ID, 'new-submit').click()
        wait(d, lambda d: not d.find_element(By.ID, 'new-dialog').is_displayed(), 'the photo is shared')

    def feed(self):
        return self.focus().execute_script(
            "return [...document.querySelectorAll('#feed .entry')].map(e => ({id: e.dataset.id, who: e.querySelector('header a').textContent,"
            " caption: e.querySelector('.caption')?.textContent ?? '', likes: e.querySelector('.like').textContent,"
            " image: e.querySelector('img.photo').src, loaded: e.querySelector('img.photo').naturalWidth > 0}))")

    def wait_feed(self, predicate, message):
        self.focus()
        wait(self.driver, lambda _: predicate(self.feed()), message)
        return self.feed()


@pytest.fixture
def people(browser, hearth_server):
    url = f'{hearth_server.base_url}/apps/timeline/?ns=timeline-{uuid.uuid4().hex[:8]}'
    home = browser.current_window_handle
    made = []

    def person(name):
        made.append(Person(browser, url, name))
        return made[-1]

    yield person
    for p in made:
        browser.switch_to.window(p.handle)
        browser.execute_script('localStorage.clear()')
        browser.close()
    browser.switch_to.window(home)


def test_share_follow_like_comment_delete(people, tmp_path):
    ada = people('ada')
    ada.sign_up()
    ada.share(png(tmp_path / 'sunset.png', (240, 120, 60)), 'Sunset')
    ada.share(png(tmp_path / 'sea.png', (40, 120, 200)), 'The sea')
    feed = ada.wait_feed(lambda f: [p['caption'] for p in f] == ['The sea', 'Sunset'] and all(p['loaded'] for p in f), 'her photos, newest first, shown')
    photo_url = feed[0]['image']
    assert '/v0/b/' in photo_url and 'token=' in photo_url
    assert requests.get(photo_url, timeout=10).headers['Content-Type'] == 'image/png'  # the download URL works alone

    bob = people('bob')
    bob.sign_up()
    assert bob.feed() == []
    # Bob finds ada and follows her: her posts join his timeline.
    d = bob.focus()
    d.execute_script("location.hash = '#/search'")
    d.find_element(By.ID, 'search').send_keys('ad')
    wait(d, lambda d: 'ada' in d.find_element(By.ID, 'people').text, 'ada is found')
    d.find_element(By.CSS_SELECTOR, '#people a').click()
    wait(d, lambda d: d.find_element(By.ID, 'profile-name').text == 'ada' and d.find_element(By.ID, 'follow').is_displayed(), "ada's profile")
    assert d.find_element(By.ID, 'profile-bio').text == 'I am ada'
    wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, '#profile-grid img')) == 2, 'her grid of posts')
    d.find_element(By.ID, 'follow').click()
    wait(d, lambda d: d.find_element(By.ID, 'profile-followers').text == '1 follower', 'one follower')
    d.execute_script("location.hash = '#/'")
    bob.wait_feed(lambda f: [p['caption'] for p in f] == ['The sea', 'Sunset'], "ada's posts in bob's timeline")

    # Bob likes "The sea" by double-clicking the photo; ada sees the count live.
    sea = bob.feed()[0]['id']
    bob.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).dispatchEvent(new MouseEvent('dblclick', {bubbles: true}))", sea)
    bob.wait_feed(lambda f: f[0]['likes'].startswith('♥ 1'), 'liked')
    ada.wait_feed(lambda f: f[0]['likes'].endswith('1'), 'ada sees the like')

    # Ada opens the post; bob's comment appears live.
    ada.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).click()", sea)
    wait(ada.driver, lambda d: d.find_element(By.ID, 'post-dialog').is_displayed(), 'the post opens')
    bob.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).click()", sea)
    bob.driver.find_element(By.ID, 'comment-input').send_keys('Lovely\n')
    ada.focus()
    wait(ada.driver, lambda d: 'bob' in d.find_element(By.ID, 'post-comments').text and 'Lovely' in d.find_element(By.ID, 'post-comments').text, 'the comment arrives')

    # Ada deletes the post: gone from bob's timeline, and its photo from the files.
    ada.driver.execute_script('window.confirm = () => true')
    ada.driver.find_element(By.ID, 'post-delete').click()
    bob.focus().execute_script("document.getElementById('post-dialog').close()")
    bob.wait_feed(lambda f: [p['caption'] for p in f] == ['Sunset'], "the post leaves bob's timeline")
    wait(bob.driver, lambda _: requests.get(photo_url, timeout=10).status_code in (403, 404), 'the photo is deleted')
