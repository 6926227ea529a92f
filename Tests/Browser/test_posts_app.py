"""The Posts reference app (/apps/posts/) in headless Chromium: two people in two windows — sign up,
publish (two copies in one update), star by transaction in both copies, live comments — plus the
app's rules refusing what a stranger may not do. Each screen is saved to docs/screenshots/
(posts*.png)."""

import uuid

import pytest
import requests
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By

from app_windows import open_signed_out
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20


def wait(driver, condition, message):
    # The pages re-render live lists and tables: an element found a moment ago may be replaced
    # before it is read, which is a reason to look again, not a failure.
    return WebDriverWait(driver, WAIT, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: condition(d), message)


class Person:
    def __init__(self, driver, url, name):
        self.driver = driver
        driver.switch_to.new_window('window')
        self.handle = driver.current_window_handle
        # Two people on one machine: a window starts without the other's saved session (same origin).
        open_signed_out(driver, url)
        self.name = name
        self.email = f'{name}-{uuid.uuid4().hex[:6]}@example.com'

    def focus(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def sign_up(self, screenshot=None):
        d = self.focus()
        wait(d, lambda d: d.find_element(By.ID, 'auth-form').is_displayed(), 'the sign-in form')
        if screenshot:
            screenshot('posts-log-in')
        d.find_element(By.CSS_SELECTOR, '[data-mode=up]').click()
        form = d.find_element(By.ID, 'auth-form')
        form.find_element(By.NAME, 'username').send_keys(self.name)
        form.find_element(By.NAME, 'email').send_keys(self.email)
        form.find_element(By.NAME, 'password').send_keys('secret-123')
        if screenshot:
            screenshot('posts-sign-up')
            screenshot('posts-sign-up-phone', phone=True)
        d.find_element(By.ID, 'auth-submit').click()
        wait(d, lambda d: self.name in d.find_element(By.ID, 'who').text, f'{self.name} is signed in')

    def publish(self, title, body, screenshot=None):
        d = self.focus()
        d.find_element(By.ID, 'new-post').click()
        form = d.find_element(By.ID, 'post-form')
        form.find_element(By.NAME, 'title').send_keys(title)
        form.find_element(By.NAME, 'body').send_keys(body)
        if screenshot:
            screenshot('posts-new')
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        wait(d, lambda d: not d.find_element(By.ID, 'post-dialog').is_displayed(), 'the post is published')

    def posts(self):
        return self.focus().execute_script(
            "return [...document.querySelectorAll('#posts .post')].map(p => ({title: p.querySelector('h2').textContent,"
            " star: p.querySelector('.star').textContent, starred: p.querySelector('.star').getAttribute('aria-pressed') === 'true', id: p.dataset.id}))")

    def wait_posts(self, predicate, message):
        self.focus()
        return wait(self.driver, lambda _: predicate(self.posts()), message)


@pytest.fixture
def app(browser, hearth_server):
    namespace = f'posts-{uuid.uuid4().hex[:8]}'
    home = browser.current_window_handle
    people = []

    def person(name):
        people.append(Person(browser, f'{hearth_server.base_url}/apps/posts/?ns={namespace}', name))
        return people[-1]

    yield person, namespace
    for p in people:
        browser.switch_to.window(p.handle)
        browser.execute_script('localStorage.clear()')
        browser.close()
    browser.switch_to.window(home)


def test_two_people_publish_star_and_comment(app, hearth_server, screenshot):
    person, namespace = app
    ada = person('ada')
    ada.sign_up(screenshot)
    ada.publish('Hello, Hearth', 'The first post.', screenshot)
    ada.publish('Second thoughts', 'Another one.')
    ada.wait_posts(lambda posts: [p['title'] for p in posts] == ['Second thoughts', 'Hello, Hearth'], 'newest first')

    bob = person('bob')
    bob.sign_up()
    bob.wait_posts(lambda posts: len(posts) == 2, "bob sees ada's posts")
    posts = bob.posts()
    hello = [p for p in posts if p['title'] == 'Hello, Hearth'][0]
    # Bob stars "Hello": both copies change, and ada sees it live.
    bob.focus().execute_script("document.querySelector(`#posts .post[data-id='${arguments[0]}'] .star`).click()", hello['id'])
    bob.wait_posts(lambda posts: any(p['starred'] and p['title'] == 'Hello, Hearth' for p in posts), 'starred for bob')
    ada.wait_posts(lambda posts: [p['star'] for p in posts if p['title'] == 'Hello, Hearth'] == ['★ 1'] or
                   [p['star'] for p in posts if p['title'] == 'Hello, Hearth'] == ['☆ 1'], 'ada sees one star')
    owner = {'Authorization': 'Bearer owner'}
    base = hearth_server.base_url
    post = requests.get(f'{base}/posts/{hello["id"]}.json?ns={namespace}', headers=owner, timeout=10).json()
    uid = post['uid']
    copy = requests.get(f'{base}/user-posts/{uid}/{hello["id"]}.json?ns={namespace}', headers=owner, timeout=10).json()
    assert post['starCount'] == 1 and copy['starCount'] == 1 and post['stars'] == copy['stars'] and len(post['stars']) == 1
    # "My top posts" for ada: the starred one first.
    ada.focus().find_element(By.CSS_SELECTOR, '[data-tab=top]').click()
    ada.wait_posts(lambda posts: [p['title'] for p in posts] == ['Hello, Hearth', 'Second thoughts'], 'most starred first')
    screenshot('posts-top')
    ada.focus().find_element(By.CSS_SELECTOR, '[data-tab=recent]').click()
    ada.wait_posts(lambda posts: [p['title'] for p in posts] == ['Second thoughts', 'Hello, Hearth'], 'recent posts again')
    screenshot('posts')
    screenshot('posts-phone', phone=True)
    # Unstar: both copies back to zero.
    bob.focus().execute_script("document.querySelector(`#posts .post[data-id='${arguments[0]}'] .star`).click()", hello['id'])
    wait(bob.driver, lambda _: requests.get(f'{base}/user-posts/{uid}/{hello["id"]}/starCount.json?ns={namespace}', headers=owner, timeout=10).json() == 0
         and requests.get(f'{base}/posts/{hello["id"]}/starCount.json?ns={namespace}', headers=owner, timeout=10).json() == 0, 'unstarred in both copies')

    # Ada opens the post; bob's comment appears there live.
    ada.focus().execute_script("document.querySelector(`#posts .post[data-id='${arguments[0]}'] h2`).click()", hello['id'])
    wait(ada.driver, lambda d: d.find_element(By.ID, 'detail-dialog').is_displayed(), 'the detail opens')
    bob.focus().execute_script("document.querySelector(`#posts .post[data-id='${arguments[0]}'] h2`).click()", hello['id'])
    bob.driver.find_element(By.ID, 'comment-input').send_keys('Nice post!\n')
    ada.focus()
    wait(ada.driver, lambda d: 'Nice post!' in d.find_element(By.ID, 'comments').text, "bob's comment reaches ada")
    assert 'bob' in ada.driver.find_element(By.ID, 'comments').text
    screenshot('posts-detail')


def test_the_rules_keep_posts_to_their_authors(hearth_server):
    base = hearth_server.base_url

    def account(name):
        return requests.post(f'{base}/identitytoolkit.googleapis.com/v1/accounts:signUp?key=k', timeout=10,
                             json={'email': f'{name}-{uuid.uuid4().hex[:6]}@example.com', 'password': 'secret-123', 'returnSecureToken': True}).json()

    ada, eve = account('ada'), account('eve')
    post = {'uid': ada['localId'], 'author': 'ada', 'title': 'Mine', 'body': 'x', 'starCount': 0}
    both = {f'posts/p1': post, f'user-posts/{ada["localId"]}/p1': post}
    # The real app namespace, with the app's rules: signed-out readers see nothing.
    assert requests.get(f'{base}/posts.json?ns=posts', timeout=10).status_code == 401
    assert requests.patch(f'{base}/.json?ns=posts&auth={ada["idToken"]}', json=both, timeout=10).status_code == 200
    # Eve may not rewrite ada's post, nor publish as ada, nor put it in ada's user-posts.
    assert requests.put(f'{base}/posts/p1/title.json?ns=posts&auth={eve["idToken"]}', json='Hacked', timeout=10).status_code == 401
    forged = dict(post, title='Forged')
    assert requests.put(f'{base}/posts/p2.json?ns=posts&auth={eve["idToken"]}', json=forged, timeout=10).status_code == 401
    assert requests.put(f'{base}/user-posts/{ada["localId"]}/p3.json?ns=posts&auth={eve["idToken"]}', json=dict(forged, uid=eve['localId']), timeout=10).status_code == 401
    # But she may star it (stars and starCount only).
    starred = dict(post, starCount=1, stars={eve['localId']: True})
    assert requests.put(f'{base}/posts/p1.json?ns=posts&auth={eve["idToken"]}', json=starred, timeout=10).status_code == 200
