"""Size and first-render time of the HTML report (issue 32, point 4): the full Philly trace under
FIFO (82,247 jobs), its virtual cluster 6214e9 alone (41,226 jobs, ``--cases
philly-6214e9-fifo``) and a small dl2 run, each simulated with its event log, written as
a report, then opened in headless Chromium (Debian's ``chromium`` + ``chromium-driver``, network
off) several times.

First render: from the start of navigation (``performance.timeOrigin``) to the moment the page's
script has drawn every view (``document.body.dataset.ready``), as the browser measures it; the
wall time of Selenium's ``get`` is given beside it. Targets: ≤ 30 MB and ≤ 3 s.

    PYTHONPATH=src .venv/bin/python benchmarks/report_size.py [--repeat 3] [--out-dir out/bench]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from dlsched.report import report_results
from dlsched.runner import simulate

CASES = {
    "philly-fifo": dict(workload="philly", scheduler="fifo", seed=0),
    "philly-6214e9-fifo": dict(workload="philly:6214e9", scheduler="fifo", seed=0),
    "dl2-drf-200": dict(workload="dl2", scheduler="drf", seed=1),
}
TARGET_MB, TARGET_S = 30.0, 3.0


def open_browser() -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,900", "--proxy-server=http://127.0.0.1:9"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver_path = shutil.which("chromedriver") or "/usr/lib/chromium/chromedriver"
    return webdriver.Chrome(service=Service(driver_path), options=options)


def first_render(driver: Any, path: Path) -> tuple[float, float]:
    """(ms from navigation start to the page's ready mark, wall s of the load)."""
    driver.get("about:blank")
    wall = time.perf_counter()
    driver.get(path.resolve().as_uri())
    ready = driver.execute_script(
        "return document.body.dataset.ready === '1' ? performance.now() : null"
    )
    wall = time.perf_counter() - wall
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    if ready is None or errors:
        raise RuntimeError(f"{path}: the page did not render: {errors}")
    return float(ready), wall


REDRAW_JS = """
const R = window.dlschedReport, st = R.state, out = {};
for (const rows of ["server", "job"]) {
  st.rows = rows; R.resetView();
  let t = performance.now(); R.drawTimeline(); out[rows + "_whole_ms"] = performance.now() - t;
  st.t1 = st.t0 + (st.t1 - st.t0) / 20;  // a twentieth of the run: what a wheel zoom asks
  t = performance.now(); R.drawTimeline(); out[rows + "_zoomed_ms"] = performance.now() - t;
}
return out;
"""
"""Redraw times of the timeline (ms): whole run and zoomed in, per server and per job."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out-dir", type=Path, default=Path("out/bench"))
    parser.add_argument("--cases", default="philly-fifo,dl2-drf-200")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    driver = open_browser()
    rows = []
    try:
        for name in args.cases.split(","):
            case = CASES[name]
            t = time.perf_counter()
            result = simulate(case["workload"], case["scheduler"], case["seed"], record_events=True)
            sim_s = time.perf_counter() - t
            path = args.out_dir / f"report-{name}.html"
            t = time.perf_counter()
            report_results([result], path, f"{name} report benchmark")
            write_s = time.perf_counter() - t
            renders = [first_render(driver, path) for _ in range(args.repeat)]
            ms = [r[0] for r in renders]
            redraw = driver.execute_script(REDRAW_JS)
            row = {
                "case": name,
                "jobs": result.num_jobs,
                "events": len(result.event_log or ()),
                "size_mb": round(path.stat().st_size / 1e6, 2),
                "simulate_s": round(sim_s, 2),
                "write_report_s": round(write_s, 2),
                "first_render_ms_median": round(statistics.median(ms)),
                "first_render_ms_all": [round(x) for x in ms],
                "load_wall_s_all": [round(r[1], 2) for r in renders],
                "redraw_ms": {k: round(v) for k, v in redraw.items()},
            }
            row["met"] = row["size_mb"] <= TARGET_MB and max(ms) / 1000 <= TARGET_S
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
