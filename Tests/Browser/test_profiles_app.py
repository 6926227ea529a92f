"""The Profiles reference app (/apps/profiles/) in headless Chromium: two windows of the real page,
driven as a person would (clicks, typing, keys), each change seen live in the other. Each screen is
saved to docs/screenshots/ (profiles*.png)."""

import uuid

import pytest
import requests
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

WAIT = 20


def wait(driver, condition, message):
    # The pages re-render live lists and tables: an element found a moment ago may be replaced
    # before it is read, which is a reason to look again, not a failure.
    return WebDriverWait(driver, WAIT, ignored_exceptions=(NoSuchElementException, StaleElementReferenceException)).until(
        lambda d: condition(d), message)


class App:
    """One window of the Profiles page."""

    def __init__(self, driver, url):
        self.driver = driver
        driver.switch_to.new_window('window')
        self.handle = driver.current_window_handle
        driver.get(url)

    def focus(self):
        if self.driver.current_window_handle != self.handle:
            self.driver.switch_to.window(self.handle)
        return self.driver

    def rows(self):
        driver = self.focus()
        return driver.execute_script(
            "return [...document.querySelectorAll('#list .profile')].map(r => ({"
            " name: r.querySelector('.name').textContent, age: Number(r.querySelector('.age').textContent),"
            " male: r.classList.contains('male'), changed: r.classList.contains('changed'),"
            " hobbies: [...r.querySelectorAll('.chip')].map(c => c.textContent) }))")

    def names(self):
        return [row['name'] for row in self.rows()]

    def wait_rows(self, predicate, message):
        self.focus()
        return wait(self.driver, lambda _: predicate(self.rows()), message)

    def click(self, css):
        self.focus().find_element(By.CSS_SELECTOR, css).click()


@pytest.fixture
def app_url(hearth_server):
    # A namespace of its own per test, so tests never see each other's profiles.
    return f'{hearth_server.base_url}/apps/profiles/?ns=profiles-{uuid.uuid4().hex[:8]}'


@pytest.fixture
def windows(browser, app_url):
    home = browser.current_window_handle
    opened = [App(browser, app_url), App(browser, app_url)]
    yield opened
    for window in opened:
        browser.switch_to.window(window.handle)
        browser.close()
    browser.switch_to.window(home)


def test_sample_data_filter_sort_and_live_updates(windows, screenshot):
    a, b = windows
    a.focus()
    wait(a.driver, lambda d: d.find_element(By.ID, 'empty').is_displayed(), 'the empty state offers sample data')
    screenshot('profiles-empty')
    a.click('#sample-button')
    a.wait_rows(lambda rows: len(rows) == 8, 'eight sample profiles in window A')
    wait(a.driver, lambda d: d.execute_script("return [...document.querySelectorAll('#list img')].every(i => i.complete)"), 'the pictures')
    wait(a.driver, lambda d: not d.find_element(By.ID, 'toast').is_displayed(), 'the notice has gone')
    screenshot('profiles')
    screenshot('profiles-phone', phone=True)
    b.wait_rows(lambda rows: len(rows) == 8, 'window B sees them without a refresh')
    rows = b.rows()
    assert [r['name'] for r in rows][:2] == ['Ada Lovelace', 'Alan Turing']  # by id: the order they were added
    assert not rows[0]['male'] and rows[1]['male']  # pink, blue

    # Filter female, then sort by age descending: filter and sort combine.
    b.click('#filter [data-filter="female"]')
    Select(b.focus().find_element(By.ID, 'sort')).select_by_value('age-desc')
    assert b.names() == ['Grace Hopper', 'Barbara Liskov', 'Margaret Hamilton', 'Ada Lovelace']
    Select(b.focus().find_element(By.ID, 'sort')).select_by_value('name-asc')
    assert b.names() == ['Ada Lovelace', 'Barbara Liskov', 'Grace Hopper', 'Margaret Hamilton']
    b.click('#filter [data-filter="male"]')
    assert all(r['male'] for r in b.rows()) and len(b.rows()) == 4
    screenshot('profiles-filtered')
    b.click('#clear')
    assert b.names()[0] == 'Ada Lovelace' and len(b.rows()) == 8

    # Add through the form in A: errors first, then a valid profile that B sees highlighted.
    a.click('#add-button')
    form = a.focus().find_element(By.ID, 'add-form')
    form.find_element(By.NAME, 'age').send_keys('twelve')
    a.click('#add-submit')
    errors = a.driver.execute_script("return Object.fromEntries([...document.querySelectorAll('#add-form [data-error]')].map(e => [e.dataset.error, e.textContent]))")
    assert errors['name'] == 'Enter a name.'
    assert errors['age'] == 'Age is a whole number from 0 to 150.'
    assert errors['gender'] == 'Choose female or male.'
    screenshot('profiles-add')
    screenshot('profiles-add-phone', phone=True)
    assert len(b.rows()) == 8  # nothing was saved
    form = a.focus().find_element(By.ID, 'add-form')
    form.find_element(By.NAME, 'name').send_keys('Katherine Johnson')
    form.find_element(By.NAME, 'age').clear()
    form.find_element(By.NAME, 'age').send_keys('101')
    form.find_element(By.CSS_SELECTOR, 'input[name=gender][value=female]').click()
    form.find_element(By.NAME, 'hobbies').send_keys('orbits, bridge, orbits')
    a.click('#add-submit')
    added = b.wait_rows(lambda rows: len(rows) == 9, 'the new profile appears in window B')
    newest = [r for r in b.rows() if r['name'] == 'Katherine Johnson'][0]
    assert newest['age'] == 101 and newest['hobbies'] == ['orbits', 'bridge'] and newest['changed']
    assert added


def test_detail_edit_hobbies_and_delete_by_keyboard(windows, app_url, screenshot):
    a, b = windows
    base, namespace = app_url.split('/apps/')[0], app_url.split('ns=')[1]
    # Two profiles written straight to the database, as another client would.
    for key, profile in [('p1', {'id': 1, 'name': 'Ada', 'age': 36, 'gender': 'female', 'hobbies': ['poetry']}),
                         ('p2', {'id': 2, 'name': 'Alan', 'age': 41, 'gender': 'male'})]:
        assert requests.put(f'{base}/profiles/{key}.json?ns={namespace}', json=profile, timeout=10).status_code == 200
    a.wait_rows(lambda rows: len(rows) == 2, 'both profiles in window A')
    b.wait_rows(lambda rows: len(rows) == 2, 'both profiles in window B')

    # Keyboard: focus the first row, arrow down, Enter opens Alan's detail.
    driver = a.focus()
    driver.execute_script("document.querySelector('#list .profile').focus()")
    driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    driver.switch_to.active_element.send_keys(Keys.ENTER)
    wait(driver, lambda d: d.find_element(By.ID, 'detail-dialog').is_displayed(), 'the detail view opens')
    assert driver.find_element(By.ID, 'detail-name').text == 'Alan'
    hobby = driver.find_element(By.ID, 'hobby-input')
    hobby.send_keys('running, chess')
    hobby.send_keys(Keys.ENTER)
    b.wait_rows(lambda rows: rows[1]['hobbies'] == ['running', 'chess'], 'the new hobbies reach window B')
    assert b.rows()[1]['changed']
    a.focus()
    screenshot('profiles-detail')
    # Remove one hobby from the detail view.
    a.focus().find_element(By.CSS_SELECTOR, '#detail-hobbies button[aria-label="Remove running"]').click()
    b.wait_rows(lambda rows: rows[1]['hobbies'] == ['chess'], 'the removal reaches window B')

    # B has Alan open when A deletes him: B's detail view closes and says why.
    b.focus().execute_script("document.querySelectorAll('#list .profile')[1].click()")
    a.focus()
    driver.execute_script('window.confirm = () => true')
    a.click('#delete-button')
    a.wait_rows(lambda rows: [r['name'] for r in rows] == ['Ada'], 'Alan is gone from window A')
    b.wait_rows(lambda rows: [r['name'] for r in rows] == ['Ada'], 'Alan is gone from window B')
    wait(b.focus(), lambda d: not d.find_element(By.ID, 'detail-dialog').is_displayed(), "B's detail view closes")
    assert 'deleted' in b.focus().find_element(By.ID, 'toast').text


def test_the_apps_namespace_gets_the_apps_rules(hearth_server):
    base = hearth_server.base_url
    # Served at a stable path, linked from the start page.
    assert 'href="/apps/profiles/"' in requests.get(f'{base}/', timeout=10).text
    redirect = requests.get(f'{base}/apps/profiles', allow_redirects=False, timeout=10)
    assert redirect.status_code == 301 and redirect.headers['Location'] == '/apps/profiles/'
    # The `profiles` namespace runs the app's rules: malformed profiles are refused (401, as Firebase's REST API answers), good ones accepted.
    good = {'id': 1, 'name': 'Ada', 'age': 36, 'gender': 'female'}
    assert requests.put(f'{base}/profiles/x.json?ns=profiles', json=good, timeout=10).status_code == 200
    bad = dict(good, gender='robot')
    assert requests.put(f'{base}/profiles/x.json?ns=profiles', json=bad, timeout=10).status_code == 401
    assert requests.put(f'{base}/profiles/y.json?ns=profiles', json=dict(good, extra=1), timeout=10).status_code == 401
    assert requests.get(f'{base}/profiles/x.json?ns=profiles', timeout=10).json() == good
    assert requests.delete(f'{base}/profiles/x.json?ns=profiles', timeout=10).status_code == 200
    # Ids only grow, one at a time.
    current = requests.get(f'{base}/meta/nextId.json?ns=profiles', timeout=10).json()
    if current is None:
        assert requests.put(f'{base}/meta/nextId.json?ns=profiles', json=1, timeout=10).status_code == 200
        current = 1
    assert requests.put(f'{base}/meta/nextId.json?ns=profiles', json=current + 5, timeout=10).status_code == 401
    assert requests.put(f'{base}/meta/nextId.json?ns=profiles', json=current + 1, timeout=10).status_code == 200
