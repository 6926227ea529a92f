"""The emulator's rules coverage page (`/.inspect/coverage?ns=…`) in Chromium: requests judged by the
rules are counted, each rule's value is marked by what it answered, Hearth's stylesheet applies under
the page's Content-Security-Policy (nothing refused, no script), and the table reaches every rule."""


import os
import pathlib
import sys

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402

SECRET = 'coverage-test-secret'

RULES = '''{
  // Notes: signed-in users only. <b>not markup</b>
  "rules": {
    "notes": { ".read": "auth != null", ".write": "auth != null" },
    "open": { ".read": true }
  }
}'''


def test_the_coverage_page_marks_each_rule_by_what_it_answered(browser, hearth_server, screenshot):
    namespace = 'coverage-demo'  # new rules start a new count, so a fixed name repeats; the screenshot stays the same
    base = hearth_server.base_url
    owner = {'Authorization': 'Bearer owner'}
    assert requests.put(f'{base}/.settings/rules.json?ns={namespace}', data=RULES, headers=owner, timeout=10).status_code == 200
    for _ in range(2):
        assert requests.get(f'{base}/notes.json?ns={namespace}', timeout=10).status_code == 401
    assert requests.get(f'{base}/open.json?ns={namespace}', timeout=10).status_code == 200

    home = browser.current_window_handle
    browser.switch_to.new_window('window')
    try:
        browser.get_log('browser')  # what earlier pages logged
        browser.get(f'{base}/.inspect/coverage?ns={namespace}')
        assert browser.find_element(By.TAG_NAME, 'h1').text == 'Rules coverage'
        marks = {span.get_attribute('title').split(':')[0]: span for span in browser.find_elements(By.CSS_SELECTOR, 'pre .rule')}
        assert list(marks) == ['rules/notes/.read', 'rules/notes/.write', 'rules/open/.read']
        assert marks['rules/notes/.read'].get_attribute('class') == 'rule denied'
        assert marks['rules/notes/.read'].text == '"auth != null"'
        assert 'evaluated 2 times: 0 allowed, 2 refused' in marks['rules/notes/.read'].get_attribute('title')
        assert marks['rules/notes/.write'].get_attribute('class') == 'rule never'
        assert marks['rules/open/.read'].get_attribute('class') == 'rule allowed'
        # The rules' own text stays text.
        assert '<b>not markup</b>' in browser.find_element(By.CSS_SELECTOR, 'pre').text
        assert not browser.find_elements(By.CSS_SELECTOR, 'pre b')
        # Hearth's stylesheet applied (the page's CSP lets it in), and the page's own styles too.
        background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        assert background == 'rgb(246, 247, 249)', background
        refused = browser.execute_script("return getComputedStyle(document.querySelector('pre .rule.denied')).backgroundColor")
        assert refused == 'rgb(255, 240, 240)', refused
        rows = browser.find_elements(By.CSS_SELECTOR, 'tbody tr')
        assert [row.get_attribute('class') for row in rows] == ['denied', 'never', 'allowed']
        assert [cell.text for cell in rows[0].find_elements(By.TAG_NAME, 'td')] == ['4', '2', '0', '2']
        problems = [entry['message'] for entry in browser.get_log('browser') if entry['level'] in ('SEVERE', 'WARNING')]
        assert problems == [], problems
        screenshot('rules-coverage')
    finally:
        browser.close()
        browser.switch_to.window(home)


def _ready(url):
    try:
        return requests.get(f'{url}/', timeout=2).status_code == 200
    except requests.RequestException:
        return False


@pytest.fixture(scope='module')
def emulator_with_secret(tmp_path_factory):
    """An emulator-mode server with an admin secret, so its console can be signed into."""
    os.environ['HEARTH_ADMIN_SECRET'] = SECRET
    try:
        server = hearth_process.start(str(tmp_path_factory.mktemp('coverage')), _ready, emulator=True)
    finally:
        os.environ.pop('HEARTH_ADMIN_SECRET', None)
    yield server
    hearth_process.stop(server.process)


def test_the_console_links_an_emulators_database_rules_to_their_coverage(browser, emulator_with_secret):
    base = emulator_with_secret.base_url
    home = browser.current_window_handle
    browser.switch_to.new_window('window')
    try:
        browser.get(f'{base}/console/')
        wait = WebDriverWait(browser, 20)
        field = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, '#sign-in input[name=secret]'))
        field.send_keys(SECRET, Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, 'console-view').is_displayed())
        browser.execute_script('arguments[0].click()', browser.find_element(By.CSS_SELECTOR, '.sidebar a[data-view=rules]'))
        link = wait.until(lambda d: d.find_element(By.ID, 'rules-coverage') if d.find_element(By.ID, 'rules-coverage').is_displayed() else None)
        namespace = browser.find_element(By.ID, 'namespace').get_attribute('value')
        assert namespace
        assert link.get_attribute('href') == f'{base}/.inspect/coverage?ns={namespace}', (link.get_attribute('href'), namespace)
        # Storage rules have no coverage: the link goes with the database's.
        browser.execute_script('arguments[0].click()', browser.find_element(By.CSS_SELECTOR, '[data-rules=storage]'))
        wait.until(lambda d: not d.find_element(By.ID, 'rules-coverage').is_displayed())
        browser.execute_script('arguments[0].click()', browser.find_element(By.CSS_SELECTOR, '[data-rules=database]'))
        link = wait.until(lambda d: d.find_element(By.ID, 'rules-coverage') if d.find_element(By.ID, 'rules-coverage').is_displayed() else None)
        # A request the rules refuse, in the console's database, then the coverage shows it.
        assert requests.put(f'{base}/.settings/rules.json?ns={namespace}', data=RULES, headers={'Authorization': 'Bearer owner'}, timeout=10).status_code == 200
        assert requests.get(f'{base}/notes.json?ns={namespace}', timeout=10).status_code == 401
        link.click()
        wait.until(lambda d: d.find_element(By.TAG_NAME, 'h1').text == 'Rules coverage')
        assert 'evaluated 1 time: 0 allowed, 1 refused' in browser.find_element(By.CSS_SELECTOR, 'pre .rule.denied').get_attribute('title')
    finally:
        browser.execute_script('sessionStorage.clear()')
        browser.close()
        browser.switch_to.window(home)
