"""Headless Chromium for the report pages (tests/test_report_browser.py, bench/bench_report_html.py).

Driver: selenium with Debian's ``chromedriver`` (package ``chromium-driver``). Debian builds ``chromium`` and
``chromium-driver`` from one source package, so the driver always speaks the browser's version; selenium is
pure Python from PyPI and, given the driver's path, downloads nothing (Selenium Manager is never asked).
Playwright was the other candidate: its Python package drives its own pinned browser builds, which cannot be
downloaded here, and with ``executable_path`` pointing at Debian's chromium it speaks a CDP revision that may
not match the installed browser; it also ships a ~40 MB Node.js driver. WebDriver's explicit waits give "wait
for this element/condition" without sleeping, and Chromium's browser log (``goog:loggingPrefs``) gives the
console errors.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
INSTALL_HINT = "apt-get install chromium chromium-driver"


class BrowserMissing(Exception):
    """Chromium, its driver or selenium is not installed: the message says which and how to get it."""


def find_browser() -> tuple[str, str]:
    """(chromium, chromedriver) paths, or BrowserMissing."""
    chrome = os.environ.get("ACP_CHROMIUM") or next((p for p in map(shutil.which, BROWSERS) if p), None)
    driver = os.environ.get("ACP_CHROMEDRIVER") or shutil.which("chromedriver")
    if not chrome:
        raise BrowserMissing(f"no chromium on PATH ({INSTALL_HINT})")
    if not driver:
        raise BrowserMissing(f"no chromedriver on PATH ({INSTALL_HINT})")
    try:
        import selenium  # noqa: F401
    except ImportError:
        raise BrowserMissing("selenium is not installed (pip install '.[test]')") from None
    return chrome, driver


class Browser:
    """One headless Chromium session; ``with Browser() as b: b.load(path)``."""

    def __init__(self, width: int = 1280, height: int = 1000, timeout: float = 30):
        chrome, driver = find_browser()
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        opts = webdriver.ChromeOptions()
        opts.binary_location = chrome
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--disable-extensions", f"--window-size={width},{height}", "--hide-scrollbars"):
            opts.add_argument(arg)
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.driver = webdriver.Chrome(service=Service(executable_path=driver), options=opts)
        except Exception as e:  # the browser would not start (a broken install): say so, the tests skip
            raise BrowserMissing(f"chromium did not start under {driver}: {str(e).splitlines()[0]}") from None
        self.timeout = timeout

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.driver.quit()

    # -- pages ------------------------------------------------------------------------------------------
    def load(self, path: Path, fragment: str = "") -> float:
        """Open the page; wait until its script has drawn it; return the seconds that took."""
        t0 = time.perf_counter()
        self.driver.get(Path(path).resolve().as_uri() + (f"#{fragment}" if fragment else ""))
        self.wait(lambda d: d.execute_script("return document.readyState") == "complete")
        return time.perf_counter() - t0

    def wait(self, condition, timeout: float | None = None) -> Any:
        from selenium.webdriver.support.ui import WebDriverWait
        return WebDriverWait(self.driver, timeout or self.timeout).until(condition)

    def js(self, script: str, *args) -> Any:
        return self.driver.execute_script(script, *args)

    def console_errors(self) -> list[str]:
        """Console errors and uncaught exceptions since the last call."""
        return [e["message"] for e in self.driver.get_log("browser") if e.get("level") == "SEVERE"]

    def screenshot(self, path: Path, full_page: bool = True) -> Path:
        """A PNG of the page; ``full_page``: the window grows to the page's height first (at most 8000 px)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        size = self.driver.get_window_size()
        if full_page:
            h = self.js("return Math.min(8000, document.documentElement.scrollHeight)")
            self.driver.set_window_size(size["width"], max(h, 300))
        try:
            self.driver.save_screenshot(str(path))
        finally:
            if full_page:
                self.driver.set_window_size(size["width"], size["height"])
        return path

    def visible_rule_ids(self) -> list[str]:
        """The rule rows of report.html that are rendered (not hidden by a filter)."""
        return self.js("return [...document.querySelectorAll('tr.rule')]"
                       ".filter(tr => tr.offsetParent !== null).map(tr => tr.id.slice(5))")

    def open_rule(self, rule_id: str) -> Any:
        """Click a rule of report.html; wait until its evidence row is shown; return that row."""
        from selenium.webdriver.common.by import By
        row = self.driver.find_element(By.ID, f"rule-{rule_id}")
        self.js("arguments[0].scrollIntoView({block: 'center'})", row)
        row.click()
        return self.wait(lambda d: next((e for e in d.find_elements(By.CSS_SELECTOR, f"tr.ev[data-for='{rule_id}']")
                                         if e.is_displayed() and e.find_elements(By.CSS_SELECTOR, ".evidence")), False))

    def open_biggest_evidence(self, report: dict[str, Any]) -> float:
        """Open the failing rule with the most evidence; return the seconds until it is drawn."""
        rule = max((r for r in report["rules"] if r["status"] == "fail"), key=lambda r: len(r["evidence"]))
        t0 = time.perf_counter()
        self.open_rule(rule["id"])
        return time.perf_counter() - t0
