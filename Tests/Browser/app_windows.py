"""Windows of the reference apps for two people in one browser."""

from selenium.common.exceptions import TimeoutException, NoSuchElementException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait


def open_signed_out(driver, url, attempts=5):
    """Opens an app at `url` in the current window with no saved session, showing its sign-in form.

    Two people in one browser share one origin's localStorage: the other person's window may save
    its session again just after this one cleared it (a profile update that answers late), and this
    window would then open signed in as them. So: clear, reload, and check for the form; again if not.
    """
    for _ in range(attempts):
        driver.get(url)
        driver.execute_script('localStorage.clear()')
        driver.get(url)
        try:
            WebDriverWait(driver, 10, ignored_exceptions=(NoSuchElementException,)).until(
                lambda d: d.find_element(By.ID, 'auth-form').is_displayed())
            return
        except TimeoutException:
            continue
    raise AssertionError(f'{url} never showed its sign-in form with no saved session ({attempts} tries)')
