"""A real browser for the live page: Debian's headless ``chromium`` driven by Selenium through Debian's
``chromium-driver``. Outside CI a missing one skips with the reason; under CI it fails (.ci/run installs both).

Alerts are the test's canary: a script the page was tricked into running (``<script>alert(1)</script>`` in a tool
output) would open one, and `no_alert` says whether any is open.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

__all__ = ["browser", "no_alert", "wait_for"]

T = TypeVar("T")


def _missing(what: str) -> None:
    message = f"{what} (apt-get install -y chromium chromium-driver; .ci/run installs them when missing)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@contextmanager
def browser(profile: Path, size: tuple[int, int] = (1400, 1000)) -> Iterator[Any]:
    """A headless Chromium under Selenium, its profile in ``profile``; quit on leaving."""
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _missing("selenium is not installed in this environment (hatch's default env has it)")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver_path = shutil.which("chromedriver")
    if chromium is None or driver_path is None:
        _missing("Debian's chromium and chromium-driver are needed")
    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--window-size={size[0]},{size[1]}",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    # The driver's path given: Selenium Manager (which would go to the network for a driver) is not asked.
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(driver_path)))
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()


def wait_for(check: Callable[[], T | None], what: str, timeout: float = 60.0) -> T:
    """``check()``'s first truthy value, asked every 50 ms; fails saying ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # noqa: BLE001 - a page still drawing raises stale-element errors; ask again
            last_error, value = exc, None
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} (last error: {last_error})")


def no_alert(driver: Any) -> bool:
    """Whether no alert is open (a script injected into the page would have opened one)."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        driver.switch_to.alert  # noqa: B018 - the property raises when there is none
    except NoAlertPresentException:
        return True
    return False
