"""Headless Chromium for the browser suites and the console bench.

Chromium leaves its singleton socket's directory (`org.chromium.Chromium.*`) in the temporary directory
even after `quit()`, five per CI run. `Chromium` points its `TMPDIR` at a directory of its own and
removes that directory when the browser quits.

    driver = Chromium('/usr/bin/chromedriver', options)
    try:
        driver.get(url)
    finally:
        driver.quit()
"""

import os
import shutil
import tempfile

from selenium import webdriver
from selenium.webdriver.chrome.service import Service


class Chromium(webdriver.Chrome):
    """`webdriver.Chrome` through `chromedriver`, with `env` (default: this process's) for the browser,
    whose temporary files go to a directory removed by `quit()`."""

    def __init__(self, chromedriver, options, env=None):
        self.scratch = tempfile.mkdtemp(prefix='hearth-chromium-')
        service = Service(executable_path=chromedriver, env={**(os.environ if env is None else env), 'TMPDIR': self.scratch})
        try:
            super().__init__(service=service, options=options)
        except BaseException:
            shutil.rmtree(self.scratch, ignore_errors=True)
            raise

    def quit(self):
        try:
            super().quit()
        finally:
            shutil.rmtree(self.scratch, ignore_errors=True)
