"""Account emails end to end: a password reset asked for by an app lands in the outbox
(`hearth users outbox`), its link opens Hearth's action page in Chromium, and the new password set
there signs in; an email verification link marks the address verified."""

import json
import os
import pathlib
import subprocess
import sys
import uuid

import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / 'Support' / 'Python'))
import hearth_process  # noqa: E402

KEY = 'browser-test-key'


def identity(server, operation, body):
    return requests.post(f'{server.base_url}/identitytoolkit.googleapis.com/v1/accounts:{operation}?key={KEY}', json=body, timeout=10)


def outbox(server, to):
    binary = os.environ.get('HEARTH_BIN') or str(hearth_process.DEFAULT_BIN)
    done = subprocess.run([binary, 'users', 'outbox', '--json', '--data', server.data_dir, '--project', os.environ.get('HEARTH_PROJECT', 'hearth')],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines() if json.loads(line)['to'] == to]


def open_link(browser, link):
    home = browser.current_window_handle
    browser.switch_to.new_window('window')
    browser.get(link)
    return home


def test_password_reset_through_the_outbox_and_the_action_page(browser, hearth_server):
    email = f'reset-{uuid.uuid4().hex[:8]}@example.com'
    assert identity(hearth_server, 'signUp', {'email': email, 'password': 'old-password', 'returnSecureToken': True}).status_code == 200
    assert identity(hearth_server, 'sendOobCode', {'requestType': 'PASSWORD_RESET', 'email': email}).status_code == 200
    mails = outbox(hearth_server, email)
    assert len(mails) == 1 and mails[0]['requestType'] == 'PASSWORD_RESET'
    home = open_link(browser, mails[0]['link'])
    try:
        wait = WebDriverWait(browser, 20)
        form = wait.until(lambda d: d.find_element(By.ID, 'reset') if d.find_element(By.ID, 'reset').is_displayed() else None)
        assert email in browser.find_element(By.ID, 'message').text
        form.find_element(By.NAME, 'password').send_keys('new-password-1')
        form.find_element(By.NAME, 'again').send_keys('not-the-same')
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        wait.until(lambda d: 'not the same' in d.find_element(By.ID, 'error').text)
        form.find_element(By.NAME, 'again').clear()
        form.find_element(By.NAME, 'again').send_keys('new-password-1')
        form.find_element(By.CSS_SELECTOR, 'button[type=submit]').click()
        wait.until(lambda d: d.find_element(By.ID, 'title').text == 'Password changed')
        # The new password signs in, the old one does not; the link is spent.
        assert identity(hearth_server, 'signInWithPassword', {'email': email, 'password': 'new-password-1'}).status_code == 200
        assert identity(hearth_server, 'signInWithPassword', {'email': email, 'password': 'old-password'}).status_code == 400
        browser.get(mails[0]['link'])
        wait.until(lambda d: d.find_element(By.ID, 'title').text == 'This link did not work')
        assert 'not valid any more' in browser.find_element(By.ID, 'message').text
    finally:
        browser.close()
        browser.switch_to.window(home)


def test_email_verification_link(browser, hearth_server):
    email = f'verify-{uuid.uuid4().hex[:8]}@example.com'
    account = identity(hearth_server, 'signUp', {'email': email, 'password': 'pass-word-1', 'returnSecureToken': True}).json()
    assert identity(hearth_server, 'sendOobCode', {'requestType': 'VERIFY_EMAIL', 'idToken': account['idToken']}).status_code == 200
    link = outbox(hearth_server, email)[0]['link']
    home = open_link(browser, link)
    try:
        WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, 'title').text == 'Email verified')
    finally:
        browser.close()
        browser.switch_to.window(home)
    user = identity(hearth_server, 'lookup', {'idToken': account['idToken']}).json()['users'][0]
    assert user['emailVerified'] is True


def test_an_email_change_is_undone_from_the_old_address(browser, hearth_server, screenshot):
    """The address an account leaves gets an undo link: opening it changes nothing until its button is
    pressed; pressing it moves the account back and offers a password reset."""
    # Fixed addresses (unused elsewhere in the session's server): the screenshot stays the same run to run.
    old = 'ada.owner@example.com'
    new = 'someone.else@example.com'
    account = identity(hearth_server, 'signUp', {'email': old, 'password': 'pass-word-1', 'returnSecureToken': True}).json()
    # Only a verified address gets an undo: verify it first, by its link's code.
    assert identity(hearth_server, 'sendOobCode', {'requestType': 'VERIFY_EMAIL', 'idToken': account['idToken']}).status_code == 200
    verification = outbox(hearth_server, old)[0]['link']
    assert identity(hearth_server, 'update', {'oobCode': dict(p.split('=', 1) for p in verification.split('?', 1)[1].split('&'))['oobCode']}).status_code == 200
    assert identity(hearth_server, 'sendOobCode', {'requestType': 'VERIFY_AND_CHANGE_EMAIL', 'idToken': account['idToken'], 'newEmail': new}).status_code == 200
    change = outbox(hearth_server, new)[0]['link']
    code = dict(p.split('=', 1) for p in change.split('?', 1)[1].split('&'))['oobCode']
    assert identity(hearth_server, 'update', {'oobCode': code}).json()['email'] == new
    notices = [mail for mail in outbox(hearth_server, old) if mail['requestType'] == 'RECOVER_EMAIL']
    assert len(notices) == 1 and new in notices[0]['body']
    home = open_link(browser, notices[0]['link'])
    try:
        wait = WebDriverWait(browser, 20)
        wait.until(lambda d: d.find_element(By.ID, 'title').text == 'Restore your sign-in email')
        button = wait.until(lambda d: d.find_element(By.ID, 'confirm-button') if d.find_element(By.ID, 'confirm-button').is_displayed() else None)
        assert button.text == f'Restore {old}'
        assert new in browser.find_element(By.ID, 'message').text
        screenshot('account-recover-email')
        # Opening the link moved nothing.
        assert identity(hearth_server, 'signInWithPassword', {'email': new, 'password': 'pass-word-1'}).status_code == 200
        button.send_keys('\n')
        wait.until(lambda d: d.find_element(By.ID, 'title').text == 'Sign-in email restored')
        # Moved back, and the password cleared (whoever moved it may have set it): only a reset signs in.
        assert identity(hearth_server, 'signInWithPassword', {'email': old, 'password': 'pass-word-1'}).status_code == 400
        assert identity(hearth_server, 'signInWithPassword', {'email': new, 'password': 'pass-word-1'}).status_code == 400
        # The keyboard's focus is on the next step's button.
        assert browser.switch_to.active_element.get_attribute('id') == 'confirm-button'
        reset = wait.until(lambda d: d.find_element(By.ID, 'confirm-button') if d.find_element(By.ID, 'confirm-button').is_displayed() else None)
        assert reset.text == 'Send me a password reset email'
        reset.click()
        wait.until(lambda d: d.find_element(By.ID, 'title').text == 'Check your inbox')
        assert not browser.find_element(By.ID, 'confirm').is_displayed()
        assert [mail['requestType'] for mail in outbox(hearth_server, old)].count('PASSWORD_RESET') == 1
    finally:
        browser.close()
        browser.switch_to.window(home)
