"""The report in a real browser (headless Chromium, network off; see conftest.py): it loads
with no console error, draws one bar per job allocation of a small known run (counted in its
event log), filters and sorts the job table, and its screenshot is not blank."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import dlsched
from dlsched.report import report_results
from dlsched.sim.event_log import KINDS

pytestmark = pytest.mark.integration  # a real browser process


@pytest.fixture(scope="module")
def known_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dlsched.sim.Result]:
    """A preemptive run with rescales and preemptions (40 jobs), and its page."""
    result = dlsched.simulate("dl2", "tiresias", 1, num_jobs=40, load=2.0, record_events=True)
    path = tmp_path_factory.mktemp("report") / "known.html"
    report_results([result], path, "known run")
    return path, result


def _open(browser: Any, path: Path) -> list[dict[str, Any]]:
    """Load ``path``; the console's errors and warnings since (not earlier pages')."""
    browser.get("about:blank")
    browser.get_log("browser")
    browser.get(path.resolve().as_uri())
    assert browser.execute_script("return document.body.dataset.ready") == "1"
    return [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def test_loads_without_console_errors(browser: Any, known_run: tuple[Path, Any]) -> None:
    assert _open(browser, known_run[0]) == []
    assert browser.title == "known run"


def test_one_bar_per_allocation(browser: Any, known_run: tuple[Path, Any]) -> None:
    path, result = known_run
    _open(browser, path)
    kinds = [KINDS[k] for k in result.event_log.kind]
    allocations = sum(k in ("start", "rescale", "migrate") for k in kinds)
    assert "preempt" in kinds and allocations > 40  # the run is the kind the test needs
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "rows")).select_by_value("job")
    canvas = browser.find_element("id", "timeline")
    assert canvas.get_attribute("data-rows") == "job"
    assert int(canvas.get_attribute("data-bars")) == allocations
    Select(browser.find_element("id", "rows")).select_by_value("server")
    segments = browser.execute_script("return window.dlschedReport.run().segs.bar.length")
    assert int(canvas.get_attribute("data-bars")) == segments >= allocations


def _table_after_typing(browser: Any, text: str) -> list[str]:
    """Type ``text`` in the filter, let the page's debounced redraw (150 ms) happen, and read the
    first cell of every row in one script, so no redraw can leave the test a stale row."""
    from selenium.webdriver.support.ui import WebDriverWait

    box = browser.find_element("id", "filter")
    box.clear()
    box.send_keys(text)
    WebDriverWait(browser, 10).until(
        lambda b: b.execute_script("return document.getElementById('filter').value") == text
    )
    browser.execute_script("window.dlschedReport.drawTable()")
    first_cells: list[str] = browser.execute_script(
        "return [...document.querySelectorAll('#jobs tbody tr')]"
        ".map(r => r.querySelector('td').textContent)"
    )
    return first_cells


def test_filter_and_sort_the_job_table(browser: Any, known_run: tuple[Path, Any]) -> None:
    path, result = known_run
    _open(browser, path)
    table = browser.find_element("id", "jobs")
    assert table.get_attribute("data-matching") == "40"
    assert _table_after_typing(browser, "17") == ["17"]  # job IDs holding "17": 17 only, of 0..39
    long_jct = sorted(r.jct_s for r in result.records)[-5]
    _table_after_typing(browser, f"jct>={long_jct - 0.05:.1f}")  # times rounded to 0.1 s
    assert table.get_attribute("data-matching") == "5"  # the five longest
    _table_after_typing(browser, "")
    browser.find_element("css selector", "th[data-column='jct']").click()  # ascending
    browser.find_element("css selector", "th[data-column='jct']").click()  # descending
    first = browser.execute_script("return document.querySelector('#jobs tbody tr td').textContent")
    longest = max(result.records, key=lambda r: r.jct_s)
    assert first == str(longest.job_id)


def test_screenshot_is_not_blank(browser: Any, known_run: tuple[Path, Any]) -> None:
    from PIL import Image

    _open(browser, known_run[0])
    png = browser.find_element("id", "timeline").screenshot_as_png
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    colours = {tuple(p) for p in pixels[:: max(1, len(pixels) // 20000)]}
    white = np.all(pixels > 245, axis=1).mean()
    assert len(colours) > 20 and white < 0.9, (len(colours), white)


def test_decision_view_of_a_learned_policy(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    result = dlsched.simulate("dl2", "dl2", 1, num_jobs=20, record_events=True)
    path = report_results([result], tmp_path / "dl2.html", "dl2 policy")
    assert _open(browser, path) == []
    box = browser.find_element("id", "decisions-box")
    assert box.is_displayed()
    probs = browser.find_element("id", "probs")
    first = result.decision_trace["points"][0]["steps"][0]
    assert int(probs.get_attribute("data-actions")) == len(first["actions"])
    assert first["chosen"] in browser.find_element("id", "seen").text
    steps = Select(browser.find_element("id", "step"))
    steps.select_by_index(len(steps.options) - 1)
    last = result.decision_trace["points"][0]["steps"][-1]
    assert last["chosen"] in browser.find_element("id", "seen").text


def test_no_decision_view_for_a_rule(browser: Any, known_run: tuple[Path, Any]) -> None:
    _open(browser, known_run[0])
    assert not browser.find_element("id", "decisions-box").is_displayed()
