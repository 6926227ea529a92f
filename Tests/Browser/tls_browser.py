"""Chromium over TLS with a test CA trusted the way a user on Linux would (issue 27): a fresh NSS
database in a temporary HOME (`certutil -A -t "C,,"`), given to that Chromium only. No
`--ignore-certificate-errors*` flag. Shared by test_hearth_js_tls.py (in CI) and
test_official_tls.py (with the official web SDK, when FIREBASE_BOWER_DIR is set).
"""

import json
import os
import shutil
import subprocess

import pytest
from selenium import webdriver

from chromium import Chromium  # Tests/Support/Python, put on the path by conftest.py


def homes(root, ca_file):
    """Two homes under `root`: `trusted` (an NSS database trusting `ca_file`) and `untrusted` (empty)."""
    trusted, untrusted = root / 'home-trusted', root / 'home-untrusted'
    nssdb = trusted / '.pki' / 'nssdb'
    nssdb.mkdir(parents=True)
    untrusted.mkdir()
    certutil('-N', '-d', f'sql:{nssdb}', '--empty-password')
    certutil('-A', '-d', f'sql:{nssdb}', '-t', 'C,,', '-n', 'hearth-test-ca', '-i', str(ca_file))
    assert 'hearth-test-ca' in certutil('-L', '-d', f'sql:{nssdb}')
    return trusted, untrusted


def certutil(*args):
    path = shutil.which('certutil')
    if path is None:
        pytest.fail('certutil not found: apt-get install -y libnss3-tools', pytrace=False)
    done = subprocess.run([path, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f'certutil {" ".join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}'
    return done.stdout


def chromium(home):
    """A headless Chromium of its own whose HOME (so whose NSS database, $HOME/.pki/nssdb) is `home`."""
    chromium = os.environ.get('CHROMIUM', '/usr/bin/chromium')
    chromedriver = os.environ.get('CHROMEDRIVER', '/usr/bin/chromedriver')
    for path, package in ((chromium, 'chromium'), (chromedriver, 'chromium-driver')):
        if not os.access(path, os.X_OK):
            pytest.fail(f'{path} not found: install it with `apt-get install -y {package}`', pytrace=False)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run',
                '--disable-extensions', '--disable-background-networking', '--window-size=800,600'):
        options.add_argument(arg)
    options.set_capability('goog:loggingPrefs', {'browser': 'ALL', 'performance': 'ALL'})
    driver = Chromium(chromedriver, options, env=dict(os.environ, HOME=str(home)))
    driver.set_script_timeout(60)
    return driver


def network(driver):
    """The DevTools Network events seen so far: [(method, params)]."""
    events = []
    for entry in driver.get_log('performance'):
        message = json.loads(entry['message'])['message']
        if message.get('method', '').startswith('Network.'):
            events.append((message['method'], message.get('params', {})))
    return events
