"""The console (/console/) in headless Chromium against a server in its default mode (admin secret
required): sign-in, data (live, edit, add, delete), rules with the server's diagnostics, users and
files — and that its session token is the admin only while it lasts."""

import os
import pathlib
import sys
import time

import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'support'))
import hearth_process  # noqa: E402

SECRET = 'console-test-secret'
WAIT = 20


@pytest.fixture(scope='module')
def locked_server(tmp_path_factory):
    """A server in the default mode (rules locked, admin needs the secret), not the session's emulator."""
    os.environ['HEARTH_ADMIN_SECRET'] = SECRET
    try:
        server = hearth_process.start(str(tmp_path_factory.mktemp('console')), lambda url: _ready(url), emulator=False)
    finally:
        os.environ.pop('HEARTH_ADMIN_SECRET', None)
    yield server
    hearth_process.stop(server.process)


def _ready(url):
    try:
        return requests.get(f'{url}/', timeout=2).status_code == 200
    except requests.RequestException:
        return False


def admin(server, method, path, **kwargs):
    return requests.request(method, f'{server.base_url}{path}', headers={'Authorization': f'Bearer {SECRET}'}, timeout=10, **kwargs)


def wait(driver, condition, message):
    return WebDriverWait(driver, WAIT).until(lambda d: condition(d), message)


@pytest.fixture
def console(browser, locked_server):
    home = browser.current_window_handle
    browser.switch_to.new_window('window')
    browser.get(f'{locked_server.base_url}/console/')
    yield browser
    browser.execute_script('sessionStorage.clear()')
    browser.close()
    browser.switch_to.window(home)


def sign_in(driver, secret=SECRET):
    field = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, '#sign-in input[name=secret]'), 'the sign-in form')
    field.clear()
    field.send_keys(secret, Keys.ENTER)


def test_session_api_and_security(locked_server):
    base = locked_server.base_url
    assert requests.post(f'{base}/.console/session', json={'secret': 'wrong'}, timeout=10).status_code == 401
    assert requests.get(f'{base}/.console/info', timeout=10).status_code == 401
    session = requests.post(f'{base}/.console/session', json={'secret': SECRET}, timeout=10).json()
    token = session['token']
    assert token.startswith('hcs_') and SECRET not in token and session['expires'] > time.time() * 1000
    bearer = {'Authorization': f'Bearer {token}'}
    # The session is the admin on the REST API, the identity API and files...
    assert requests.put(f'{base}/console-check.json', json=1, headers=bearer, timeout=10).status_code == 200
    assert requests.get(f'{base}/identitytoolkit.googleapis.com/v1/projects/hearth/accounts:batchGet', headers=bearer, timeout=10).status_code == 200
    assert requests.get(f'{base}/storage/v1/b', headers=bearer, timeout=10).status_code == 200
    # ...and nothing once signed out.
    assert requests.delete(f'{base}/.console/session', headers=bearer, timeout=10).status_code == 204
    assert requests.put(f'{base}/console-check.json', json=2, headers=bearer, timeout=10).status_code == 401
    assert requests.get(f'{base}/.console/info', headers=bearer, timeout=10).status_code == 401


def test_sign_in_edit_data_live_and_sign_out(console, locked_server):
    driver = console
    sign_in(driver, 'not-the-secret')
    wait(driver, lambda d: "not this server's admin secret" in d.find_element(By.ID, 'sign-in-error').text, 'a wrong secret is refused')
    sign_in(driver)
    wait(driver, lambda d: d.find_element(By.ID, 'console-view').is_displayed(), 'the console opens')
    # The browser keeps a session token, never the secret.
    stored = driver.execute_script('return JSON.stringify(sessionStorage) + JSON.stringify(localStorage)')
    assert SECRET not in stored and 'hcs_' in stored

    assert admin(locked_server, 'PUT', '/shop.json', json={'items': {'apple': 3, 'pear': 5}, 'name': 'corner'}).status_code == 200
    driver.find_element(By.ID, 'goto-path').send_keys(Keys.CONTROL, 'a')
    driver.find_element(By.ID, 'goto-path').send_keys('/shop/items', Keys.ENTER)
    rows = lambda d: d.execute_script("return [...document.querySelectorAll('#tree .node-row')].map(r => r.querySelector('.key').textContent + '=' + (r.querySelector('.value')?.textContent ?? ''))")
    wait(driver, lambda d: rows(d) == ['apple=3', 'pear=5'], 'the node opens with its children')
    # A change made elsewhere shows up, highlighted.
    assert admin(locked_server, 'PUT', '/shop/items/pear.json', json=6).status_code == 200
    wait(driver, lambda d: 'pear=6' in rows(d), 'the remote change appears')
    assert driver.execute_script("return [...document.querySelectorAll('#tree .node-row.changed')].map(r => r.querySelector('.key').textContent)") == ['pear']
    # Inline edit: typed values (a number).
    driver.find_element(By.CSS_SELECTOR, '#tree .node-row .value').click()
    editor = driver.switch_to.active_element
    editor.send_keys(Keys.CONTROL, 'a')
    editor.send_keys('42', Keys.ENTER)
    wait(driver, lambda d: admin(locked_server, 'GET', '/shop/items/apple.json').json() == 42, 'the edit is saved as a number')
    # Add a child with a key, and one under a push ID.
    driver.find_element(By.ID, 'add-key').send_keys('plum')
    driver.find_element(By.ID, 'add-value').send_keys('"purple"', Keys.ENTER)
    wait(driver, lambda d: admin(locked_server, 'GET', '/shop/items/plum.json').json() == 'purple', 'the child is added')
    driver.find_element(By.ID, 'add-value').send_keys('{"x": true}', Keys.ENTER)
    wait(driver, lambda d: len(admin(locked_server, 'GET', '/shop/items.json').json()) == 4, 'a child under a push ID')
    # Delete, after confirming.
    driver.execute_script('window.confirm = () => true')
    driver.execute_script("[...document.querySelectorAll('#tree .node-row')].find(r => r.querySelector('.key').textContent === 'plum').querySelector('.actions button').click()")
    wait(driver, lambda d: admin(locked_server, 'GET', '/shop/items/plum.json').json() is None, 'the child is deleted')

    driver.find_element(By.ID, 'sign-out').click()
    wait(driver, lambda d: d.find_element(By.ID, 'sign-in-view').is_displayed(), 'signed out')
    assert driver.execute_script('return sessionStorage.length') == 0


def test_rules_users_and_files(console, locked_server):
    driver = console
    sign_in(driver)
    wait(driver, lambda d: d.find_element(By.ID, 'console-view').is_displayed(), 'the console opens')
    driver.execute_script('window.confirm = () => true')

    # Rules: an error comes back with its line and column, and nothing changes; then a good save.
    driver.execute_script('arguments[0].scrollIntoView(); arguments[0].click()', driver.find_element(By.CSS_SELECTOR, '.sidebar a[data-view=rules]'))
    source = wait(driver, lambda d: d.find_element(By.ID, 'rules-source') if '".read"' in d.find_element(By.ID, 'rules-source').get_property('value') else None, 'the rules load')
    driver.execute_script("arguments[0].value = arguments[1]", source, '{\n  "rules": {\n    ".read": "auth != null &&",\n    ".write": false\n  }\n}')
    driver.find_element(By.ID, 'rules-save').click()
    diagnostics = wait(driver, lambda d: d.find_element(By.ID, 'rules-diagnostics').text or None, 'diagnostics shown')
    assert 'Line 3' in diagnostics, diagnostics
    assert '"auth != null &&"' not in admin(locked_server, 'GET', '/.settings/rules.json').text
    driver.execute_script("arguments[0].value = arguments[1]", source, '{"rules": {".read": "auth != null", ".write": false}}')
    driver.find_element(By.ID, 'rules-save').click()
    wait(driver, lambda d: 'Saved' in d.find_element(By.ID, 'rules-state').text, 'the rules are saved')
    assert '"auth != null"' in admin(locked_server, 'GET', '/.settings/rules.json').text
    # The simulator: the same read, signed out and signed in.
    simulator = driver.find_element(By.ID, 'simulator')
    simulator.find_element(By.NAME, 'path').clear()
    simulator.find_element(By.NAME, 'path').send_keys('/shop')
    simulator.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    wait(driver, lambda d: d.find_element(By.ID, 'sim-result').text == 'Denied', 'signed out, the read is denied')
    simulator.find_element(By.NAME, 'auth').send_keys('{"uid": "ada"}')
    simulator.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
    wait(driver, lambda d: d.find_element(By.ID, 'sim-result').text == 'Allowed', 'signed in, the read is allowed')

    # Users: create, find, disable.
    driver.execute_script('arguments[0].scrollIntoView(); arguments[0].click()', driver.find_element(By.CSS_SELECTOR, '.sidebar a[data-view=users]'))
    driver.find_element(By.ID, 'user-new').click()
    form = driver.find_element(By.ID, 'user-form')
    form.find_element(By.NAME, 'email').send_keys('grace@example.com')
    form.find_element(By.NAME, 'password').send_keys('navy-1906')
    form.find_element(By.NAME, 'claims').send_keys('{"admin": true}', Keys.ENTER)
    table = lambda d: d.find_element(By.CSS_SELECTOR, '#users-table tbody').text
    wait(driver, lambda d: 'grace@example.com' in table(d), 'the new user is listed')
    driver.execute_script("[...document.querySelectorAll('#users-table tbody tr')].find(r => r.textContent.includes('grace@')).querySelector('.actions button').click()")
    wait(driver, lambda d: 'disabled' in table(d), 'the user is disabled')
    signin = requests.post(f'{locked_server.base_url}/identitytoolkit.googleapis.com/v1/accounts:signInWithPassword?key=k',
                           json={'email': 'grace@example.com', 'password': 'navy-1906'}, timeout=10)
    assert signin.json()['error']['message'] == 'USER_DISABLED'

    # Files: upload (through the file input), browse, preview, delete.
    driver.execute_script('arguments[0].scrollIntoView(); arguments[0].click()', driver.find_element(By.CSS_SELECTOR, '.sidebar a[data-view=files]'))
    wait(driver, lambda d: d.find_element(By.ID, 'bucket').get_property('value') == 'hearth.appspot.com', 'the default bucket is chosen')
    path = pathlib.Path('/tmp') / f'console-upload-{os.getpid()}.txt'
    path.write_text('uploaded from the console')
    driver.find_element(By.ID, 'file-input').send_keys(str(path))
    files = lambda d: d.find_element(By.CSS_SELECTOR, '#files-table tbody').text
    wait(driver, lambda d: path.name in files(d), 'the upload is listed')
    driver.execute_script("[...document.querySelectorAll('#files-table tbody button.linkish')].find(b => b.textContent.includes('console-upload')).click()")
    wait(driver, lambda d: 'uploaded from the console' in d.find_element(By.ID, 'file-preview').text, 'the text preview')
    driver.execute_script("[...document.querySelectorAll('#files-table tbody tr')].find(r => r.textContent.includes('console-upload')).querySelector('.button.danger').click()")
    wait(driver, lambda d: path.name not in files(d), 'the file is deleted')
    assert admin(locked_server, 'GET', f'/storage/v1/b/hearth.appspot.com/o/{path.name}').status_code == 404
    path.unlink()
