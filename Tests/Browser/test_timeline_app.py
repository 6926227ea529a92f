"""The Timeline reference app (/apps/timeline/) in headless Chromium: two people sign up, one shares
photos (uploaded to files, then posted), the other finds and follows her, sees her posts in the
timeline, likes and comments live, then deletes his comment and his like; she edits her profile (he
sees it live), deletes a post and it leaves both the timeline and the files; her session is
remembered across a reload, and her profile's button logs her out (a wrong password is explained). Each screen is saved to
docs/screenshots/ (timeline-*.png)."""

import struct
import uuid
import zlib

import pytest
import requests
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from app_windows import open_signed_out

WAIT = 20


def wait(driver, condition, message):
    # The pages re-render live lists and tables: an element found a moment ago may be replaced
    # before it is read, which is a reason to look again, not a failure.
    return WebDriverWait(driver, WAIT, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: condition(d), message)


def png(path, color, size=320):
    """A photo-like PNG: a sky fading from `color` to a pale horizon, a sun, and darker ground."""
    r0, g0, b0 = color
    rows = []
    for y in range(size):
        row = bytearray(b'\x00')
        t = y / size
        for x in range(size):
            if y > size * 0.72:  # the ground
                pixel = (int(r0 * .35), int(g0 * .35), int(b0 * .35))
            elif (x - size * .68) ** 2 + (y - size * .42) ** 2 < (size * .11) ** 2:  # the sun
                pixel = (255, 236, 170)
            else:  # the sky, towards a pale horizon
                pixel = tuple(int(c + (250 - c) * t * .9) for c in (r0, g0, b0))
            row += bytes(pixel)
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)
    path.write_bytes(b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', size, size, 8, 2, 0, 0, 0))
                     + chunk(b'IDAT', zlib.compress(b''.join(rows))) + chunk(b'IEND', b''))
    return str(path)


class Person:
    def __init__(self, driver, url, name):
        self.driver, self.name = driver, name
        driver.switch_to.new_window('window')
        self.handle = driver.current_window_handle
        open_signed_out(driver, url)  # two people in one browser: no shared session

    def focus(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def sign_up(self, screenshot=None):
        d = self.focus()
        wait(d, lambda d: d.find_element(By.ID, 'auth-form').is_displayed(), 'the sign-up form')
        d.find_element(By.CSS_SELECTOR, '[data-mode=up]').click()
        form = d.find_element(By.ID, 'auth-form')
        self.email = f'{self.name}-{uuid.uuid4().hex[:6]}@example.com'
        form.find_element(By.NAME, 'email').send_keys(self.email)
        form.find_element(By.NAME, 'password').send_keys('secret-123')
        form.find_element(By.NAME, 'username').send_keys(self.name)
        form.find_element(By.NAME, 'bio').send_keys(f'I am {self.name}')
        if screenshot:
            screenshot('timeline-sign-up')
        d.find_element(By.ID, 'auth-submit').click()
        wait(d, lambda d: d.find_element(By.ID, 'timeline-view').is_displayed(), f'{self.name} sees the timeline')

    def share(self, photo, caption, screenshot=None):
        d = self.focus()
        d.find_element(By.ID, 'new-post').click()
        form = d.find_element(By.ID, 'new-form')
        form.find_element(By.NAME, 'photo').send_keys(photo)
        form.find_element(By.NAME, 'caption').send_keys(caption)
        if screenshot:
            wait(d, lambda d: d.find_element(By.ID, 'new-preview').is_displayed(), 'the preview')
            screenshot('timeline-new-post')
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


def test_share_follow_like_comment_delete(people, tmp_path, screenshot):
    ada = people('ada')
    wait(ada.focus(), lambda d: d.find_element(By.ID, 'auth-form').is_displayed(), 'the log-in form')
    screenshot('timeline-log-in')
    ada.sign_up(screenshot)
    wait(ada.driver, lambda d: d.find_element(By.ID, 'feed-empty').is_displayed(), 'the empty timeline')
    screenshot('timeline-empty')
    ada.share(png(tmp_path / 'sunset.png', (214, 84, 52)), 'Sunset', screenshot)
    ada.share(png(tmp_path / 'sea.png', (38, 98, 178)), 'The sea')
    feed = ada.wait_feed(lambda f: [p['caption'] for p in f] == ['The sea', 'Sunset'] and all(p['loaded'] for p in f), 'her photos, newest first, shown')
    # Her session is remembered across a reload (before bob signs in: one browser keeps one session per site).
    ada.focus().refresh()
    ada.wait_feed(lambda f: [p['caption'] for p in f] == ['The sea', 'Sunset'], 'still signed in after a reload')
    feed = ada.feed()
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
    screenshot('timeline-search')
    d.find_element(By.CSS_SELECTOR, '#people a').click()
    wait(d, lambda d: d.find_element(By.ID, 'profile-name').text == 'ada' and d.find_element(By.ID, 'follow').is_displayed(), "ada's profile")
    assert d.find_element(By.ID, 'profile-bio').text == 'I am ada'
    wait(d, lambda d: len(d.find_elements(By.CSS_SELECTOR, '#profile-grid img')) == 2, 'her grid of posts')
    d.find_element(By.ID, 'follow').click()
    wait(d, lambda d: d.find_element(By.ID, 'profile-followers').text == '1 follower', 'one follower')
    assert d.find_element(By.ID, 'follow').text == 'Unfollow'
    screenshot('timeline-profile')
    screenshot('timeline-profile-phone', phone=True)
    d.execute_script("location.hash = '#/'")
    bob.wait_feed(lambda f: [p['caption'] for p in f] == ['The sea', 'Sunset'], "ada's posts in bob's timeline")

    # Bob likes "The sea" by double-clicking the photo; ada sees the count live.
    sea = bob.feed()[0]['id']
    bob.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).dispatchEvent(new MouseEvent('dblclick', {bubbles: true}))", sea)
    bob.wait_feed(lambda f: f[0]['likes'].startswith('♥ 1'), 'liked')
    ada.wait_feed(lambda f: f[0]['likes'].endswith('1'), 'ada sees the like')
    bob.wait_feed(lambda f: all(p['loaded'] for p in f), 'the photos are shown')
    screenshot('timeline')
    screenshot('timeline-phone', phone=True)

    # Ada opens the post; bob's comment appears live.
    ada.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).click()", sea)
    wait(ada.driver, lambda d: d.find_element(By.ID, 'post-dialog').is_displayed(), 'the post opens')
    bob.focus().execute_script("document.querySelector(`#feed .entry[data-id='${arguments[0]}'] img.photo`).click()", sea)
    bob.driver.find_element(By.ID, 'comment-input').send_keys('Lovely\n')
    ada.focus()
    wait(ada.driver, lambda d: 'bob' in d.find_element(By.ID, 'post-comments').text and 'Lovely' in d.find_element(By.ID, 'post-comments').text, 'the comment arrives')
    ada.driver.find_element(By.ID, 'comment-input').send_keys('Thank you!\n')
    wait(ada.driver, lambda d: 'Thank you!' in d.find_element(By.ID, 'post-comments').text, 'her reply')
    screenshot('timeline-post')

    # Bob deletes his comment (only his has a Delete button) and his like; ada sees both go.
    bob.focus()
    wait(bob.driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, '#post-comments button')) == 1, 'one comment of his to delete')
    bob.driver.find_element(By.CSS_SELECTOR, '#post-comments button[aria-label="Delete your comment"]').click()
    bob.driver.find_element(By.ID, 'post-like').click()
    ada.focus()
    wait(ada.driver, lambda d: 'Lovely' not in d.find_element(By.ID, 'post-comments').text and 'Thank you!' in d.find_element(By.ID, 'post-comments').text, 'his comment is gone')
    wait(ada.driver, lambda d: d.find_element(By.ID, 'post-like').text.strip() == '♡ 0', 'his like is gone')

    # Ada deletes the post: gone from bob's timeline, and its photo from the files.
    ada.driver.execute_script('window.confirm = () => true')
    ada.driver.find_element(By.ID, 'post-delete').click()
    bob.focus().execute_script("document.getElementById('post-dialog').close()")
    bob.wait_feed(lambda f: [p['caption'] for p in f] == ['Sunset'], "the post leaves bob's timeline")
    wait(bob.driver, lambda _: requests.get(photo_url, timeout=10).status_code in (403, 404), 'the photo is deleted')

    # Ada edits her profile from her own page; bob, on her profile, sees it live.
    d = bob.focus()
    d.execute_script("location.hash = '#/search'")
    d.find_element(By.ID, 'search').send_keys('ada')
    wait(d, lambda d: 'ada' in d.find_element(By.ID, 'people').text, 'ada is found again')
    d.find_element(By.CSS_SELECTOR, '#people a').click()
    wait(d, lambda d: d.find_element(By.ID, 'profile-name').text == 'ada', "ada's profile again")
    d = ada.focus()
    d.execute_script("location.hash = '#/me'")
    wait(d, lambda d: d.find_element(By.ID, 'edit-profile').is_displayed(), 'her own profile')
    assert not d.find_element(By.ID, 'follow').is_displayed() and d.find_element(By.ID, 'log-out').is_displayed()
    d.find_element(By.ID, 'edit-profile').click()
    form = d.find_element(By.ID, 'profile-form')
    form.find_element(By.NAME, 'bio').clear()
    form.find_element(By.NAME, 'bio').send_keys('Photos of the sea and the sun')
    form.find_element(By.NAME, 'url').send_keys('https://ada.example')
    screenshot('timeline-edit-profile')
    form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    wait(d, lambda d: not d.find_element(By.ID, 'profile-dialog').is_displayed(), 'the profile is saved')
    wait(bob.focus(), lambda d: d.find_element(By.ID, 'profile-bio').text == 'Photos of the sea and the sun'
         and d.find_element(By.ID, 'profile-url').text == 'https://ada.example', 'bob sees her new bio')

    # On her own profile, the button logs her out.
    d = ada.focus()
    d.find_element(By.ID, 'log-out').click()
    wait(d, lambda d: d.find_element(By.ID, 'auth-form').is_displayed(), 'signed out: the log-in form')
    assert not d.find_element(By.ID, 'nav').is_displayed()
    form = d.find_element(By.ID, 'auth-form')
    form.find_element(By.NAME, 'email').send_keys(ada.email)
    form.find_element(By.NAME, 'password').send_keys('wrong-password')
    d.find_element(By.ID, 'auth-submit').click()
    wait(d, lambda d: d.find_element(By.ID, 'auth-error').text == 'Wrong email or password.', 'a wrong password is explained')
    screenshot('timeline-log-in-error')
    screenshot('timeline-log-in-phone', phone=True)
    form.find_element(By.NAME, 'password').clear()
    form.find_element(By.NAME, 'password').send_keys('secret-123')
    d.find_element(By.ID, 'auth-submit').click()
    wait(d, lambda d: d.find_element(By.ID, 'nav').is_displayed() and not d.find_element(By.ID, 'signed-out').is_displayed(), 'logged in again')
