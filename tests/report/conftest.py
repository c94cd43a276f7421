"""A headless Chromium driven by Selenium for the report tests (Debian's ``chromium`` and
``chromium-driver``; ``.ci/run`` installs them): the tests that use it skip with one line
saying what is missing elsewhere. The network is off for the browser (a proxy that does not
exist), so a page that fetched anything would show it as a console error."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

DRIVERS = ("chromedriver", "/usr/lib/chromium/chromedriver")
BROWSERS = ("chromium", "chromium-browser", "google-chrome")


def _which(names: tuple[str, ...]) -> str | None:
    return next((path for name in names if (path := shutil.which(name))), None)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One headless Chromium for the session (1280×900, network off)."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.skip("browser tests need selenium (pip install -e '.[dev]')")
    driver_path, browser_path = _which(DRIVERS), _which(BROWSERS)
    if driver_path is None or browser_path is None:
        pytest.skip(
            "browser tests need Chromium and its driver (apt-get install chromium chromium-driver)"
        )
    options = webdriver.ChromeOptions()
    options.binary_location = browser_path
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1280,900",
        "--proxy-server=http://127.0.0.1:9",  # nothing listens there: no network but loopback
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
