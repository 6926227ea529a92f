"""The emulator's rules coverage page (`/.inspect/coverage?ns=…`) in Chromium: requests judged by the
rules are counted, each rule's value is marked by what it answered, Hearth's stylesheet applies under
the page's Content-Security-Policy (nothing refused, no script), and the table reaches every rule."""


import requests
from selenium.webdriver.common.by import By

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
