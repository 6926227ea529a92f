"""The console's Rules tools and Activity view in headless Chromium, against a server in its default
mode: diagnostics at their line as you type, the history of saved rules with a diff and restore, the
simulator's explanation (which rule decided, at which line), and the Activity view reflecting a burst of
writes and a denied request live, with the request log's filter. Screenshots go to docs/screenshots/."""

import pathlib
import threading
import time

import requests
from selenium.webdriver.common.by import By

from test_console import admin, console, locked_server, sign_in, wait  # noqa: F401  (fixtures)

SCREENSHOTS = pathlib.Path(__file__).resolve().parents[2] / 'docs' / 'screenshots'


def open_view(driver, name):
    link = driver.find_element(By.CSS_SELECTOR, f'.sidebar a[data-view={name}]')
    driver.execute_script('arguments[0].scrollIntoView(); arguments[0].click()', link)
    wait(driver, lambda d: d.find_element(By.ID, f'view-{name}').is_displayed(), f'the {name} view')


def type_rules(driver, text):
    """Replaces the editor's text the way typing does (an input event), so the live check runs."""
    editor = driver.find_element(By.ID, 'rules-source')
    driver.execute_script(
        "arguments[0].value = arguments[1]; arguments[0].dispatchEvent(new Event('input', {bubbles: true}))", editor, text)


def test_rules_diagnostics_history_diff_restore_and_explanations(console, locked_server):
    driver = console
    driver.set_window_size(1280, 1000)
    sign_in(driver)
    wait(driver, lambda d: d.find_element(By.ID, 'console-view').is_displayed(), 'the console opens')
    driver.execute_script('window.confirm = () => true')
    namespace = f'ops{int(time.time() * 1000) % 100000}'
    # A database of its own, so its history starts empty.
    assert admin(locked_server, 'PUT', f'/seed.json?ns={namespace}', json=True).status_code == 200
    driver.refresh()
    wait(driver, lambda d: namespace in d.find_element(By.ID, 'namespace').text, 'the new database is listed')
    driver.execute_script('window.confirm = () => true')
    driver.execute_script("const s = document.getElementById('namespace'); s.value = arguments[0]; s.dispatchEvent(new Event('change'))", namespace)
    open_view(driver, 'rules')
    wait(driver, lambda d: '".read"' in d.find_element(By.ID, 'rules-source').get_property('value'), 'the rules load')
    wait(driver, lambda d: 'Nothing saved yet' in d.find_element(By.ID, 'history-list').text, 'an empty history')

    # As you type: a problem on line 5 is listed with its line, and the gutter marks that line.
    broken = '{\n  "rules": {\n    "posts": {\n      "$uid": {\n        ".write": "auth.uid === $uid &&"\n      }\n    }\n  }\n}'
    type_rules(driver, broken)
    problems = wait(driver, lambda d: d.find_element(By.ID, 'rules-diagnostics').text or None, 'diagnostics as you type')
    assert problems.startswith('Line 5, column'), problems
    assert driver.find_element(By.ID, 'rules-check').text == '1 problem'
    assert driver.find_element(By.CSS_SELECTOR, '#rules-gutter .bad').text == '5'
    # Clicking the problem puts the caret on line 5.
    driver.find_element(By.CSS_SELECTOR, '#rules-diagnostics button').click()
    caret_line = driver.execute_script('const e = document.getElementById("rules-source"); return e.value.slice(0, e.selectionStart).split("\\n").length')
    assert caret_line == 5
    # Fixed: no problems, and nothing was saved meanwhile.
    first = broken.replace(' &&"', '"')
    type_rules(driver, first)
    wait(driver, lambda d: d.find_element(By.ID, 'rules-check').text == 'No problems', 'the fix clears the problems')
    assert 'auth.uid' not in admin(locked_server, 'GET', f'/.settings/rules.json?ns={namespace}').text

    # Two saves make two versions.
    driver.find_element(By.ID, 'rules-save').click()
    wait(driver, lambda d: 'Saved' in d.find_element(By.ID, 'rules-state').text, 'the first save')
    second = first.replace('"$uid": {', '"$uid": {\n        ".read": true,')
    type_rules(driver, second)
    driver.find_element(By.ID, 'rules-save').click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, '.history-item')) == 2, 'two versions in the history')
    items = driver.find_elements(By.CSS_SELECTOR, '.history-item')
    assert 'current' in items[0].text and 'v2' in items[0].text and 'v1' in items[1].text

    # The older version's diff against the editor: the added line shows as removed.
    items[1].click()
    wait(driver, lambda d: d.find_element(By.ID, 'history-diff-lines').text or None, 'the diff')
    removed = driver.find_elements(By.CSS_SELECTOR, '#history-diff-lines .diff-line.del')
    assert [' '.join(line.text.split()) for line in removed] == ['− ".read": true,']
    assert not driver.find_elements(By.CSS_SELECTOR, '#history-diff-lines .diff-line.add')
    assert 'would change 1 line' in driver.find_element(By.ID, 'history-diff-title').text
    driver.save_screenshot(str(SCREENSHOTS / 'console-rules-history.png'))

    # Restore: the server has v1's text again, as a third version.
    driver.find_element(By.ID, 'history-restore').click()
    wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, '.history-item')) == 3, 'the restore is a new version')
    assert admin(locked_server, 'GET', f'/.settings/rules.json?ns={namespace}').text == first
    assert driver.find_element(By.ID, 'rules-source').get_property('value') == first

    # The simulator explains: denied by the .write at line 5, then allowed by it.
    simulator = driver.find_element(By.ID, 'simulator')
    simulator.find_element(By.NAME, 'operation').send_keys('write')
    path = simulator.find_element(By.NAME, 'path')
    path.clear()
    path.send_keys('/posts/ada')
    simulator.find_element(By.NAME, 'auth').send_keys('{"uid": "bob"}')
    simulator.find_element(By.NAME, 'value').send_keys('{"title": "hi"}')
    simulator.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    wait(driver, lambda d: d.find_element(By.ID, 'sim-result').text == 'Denied', 'bob may not write ada\'s post')
    assert driver.find_element(By.ID, 'sim-summary').text == 'Denied: no .write rule allowed writing /posts/ada.'
    step = driver.find_element(By.CSS_SELECTOR, '#sim-steps tr')
    assert step.get_attribute('class') == 'fail'
    assert 'line 5' in step.text and '/posts/$uid/.write' in step.text and 'auth.uid === $uid' in step.text
    auth = simulator.find_element(By.NAME, 'auth')
    auth.clear()
    auth.send_keys('{"uid": "ada"}')
    simulator.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    wait(driver, lambda d: d.find_element(By.ID, 'sim-result').text == 'Allowed', 'ada may')
    assert 'grants writing /posts/ada' in driver.find_element(By.ID, 'sim-summary').text
    driver.execute_script("document.getElementById('simulator').scrollIntoView()")
    driver.save_screenshot(str(SCREENSHOTS / 'console-rules-simulator.png'))
    # Its line link takes the editor to the rule.
    driver.find_element(By.CSS_SELECTOR, '#sim-steps tr button').click()
    caret_line = driver.execute_script('const e = document.getElementById("rules-source"); return e.value.slice(0, e.selectionStart).split("\\n").length')
    assert caret_line == 5


def test_activity_reflects_a_burst_of_writes_and_denials_live(console, locked_server):
    driver = console
    driver.set_window_size(1280, 1000)
    sign_in(driver)
    wait(driver, lambda d: d.find_element(By.ID, 'console-view').is_displayed(), 'the console opens')
    namespace = 'activity'
    assert admin(locked_server, 'PUT', f'/.settings/rules.json?ns={namespace}', data='{"rules": {"open": {".read": true, ".write": true}}}').status_code == 200
    open_view(driver, 'activity')
    wait(driver, lambda d: d.find_element(By.ID, 'stat-connections').text != '–', 'the first poll')

    # A burst of writes from another client over a few seconds, then one request the rules refuse.
    def burst():
        session = requests.Session()
        for second in range(3):
            for index in range(40):
                assert session.put(f'{locked_server.base_url}/open/burst-{second}-{index}.json?ns={namespace}', json=index, timeout=10).status_code == 200
            time.sleep(0.6)
        assert session.put(f'{locked_server.base_url}/locked/x.json?ns={namespace}', json=1, timeout=10).status_code == 401
    writer = threading.Thread(target=burst)
    writer.start()
    row = lambda d: d.find_element(By.CSS_SELECTOR, f'#activity-databases tr[data-namespace="{namespace}"]')
    wait(driver, lambda d: float(row(d).find_elements(By.TAG_NAME, 'td')[3].text) > 0, 'writes per second for the database, live')
    assert float(driver.find_element(By.ID, 'stat-writes').text) > 0
    driver.save_screenshot(str(SCREENSHOTS / 'console-activity.png'))
    writer.join()
    wait(driver, lambda d: '/locked/x.json' in d.find_element(By.ID, 'activity-log').text, 'the denied request in the log')
    assert '/open/burst-2-39.json' in driver.find_element(By.ID, 'activity-log').text

    log_rows = lambda: driver.execute_script("return [...document.querySelectorAll('#activity-log tr')].map(r => r.textContent)")
    driver.find_element(By.ID, 'activity-filter').send_keys('burst-1-')
    rows = log_rows()
    assert len(rows) == 40 and all('burst-1-' in r for r in rows), rows
    assert driver.find_element(By.ID, 'activity-count').text.startswith('40 of ')
    driver.execute_script("const f = document.getElementById('activity-filter'); f.value = ''; f.dispatchEvent(new Event('input'))")
    driver.find_element(By.ID, 'activity-denied').click()
    rows = log_rows()
    assert rows and all('denied' in r for r in rows), rows
    assert any('/locked/x.json' in r for r in rows)

    # The same counters for Prometheus, for the admin only.
    assert requests.get(f'{locked_server.base_url}/metrics', timeout=10).status_code == 401
    metrics = admin(locked_server, 'GET', '/metrics').text
    assert f'hearth_writes_total{{namespace="{namespace}"}} 120' in metrics
    assert f'hearth_denied_total{{namespace="{namespace}"}} 1' in metrics
