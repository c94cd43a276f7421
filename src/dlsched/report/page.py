"""One self-contained HTML page of one or more runs: the page's own script and style (package
data files under ``static/``) and the runs' data (`dlsched.report.data`), all inline, so the file
opens offline and fetches nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from dlsched.report.data import RunInput, run_data

MEAN_METRICS = ("avg_jct_s", "avg_wait_s", "avg_slowdown", "makespan_s", "gpu_util")
"""What the per-scheduler means chart shows (each: mean over seeds, 95 % interval)."""


def _static(name: str) -> str:
    return (resources.files("dlsched.report") / "static" / name).read_text(encoding="utf-8")


def _ci95(values: Sequence[float]) -> float:
    """Half-width of the Student-t 95 % interval of the mean (NaN for fewer than 2 values)."""
    x = np.asarray([v for v in values if v == v], dtype=float)
    if x.size < 2:
        return math.nan
    from scipy import stats

    return float(stats.t.ppf(0.975, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))


def run_metrics(data: Mapping[str, Any]) -> dict[str, float]:
    """`MEAN_METRICS` of one run, from its page data (finished jobs only)."""
    jobs = data["jobs"]
    done = [k for k, f in enumerate(jobs["finish"]) if f is not None]

    def mean(column: str) -> float:
        values = [jobs[column][k] for k in done if jobs[column][k] is not None]
        return float(np.mean(values)) if values else math.nan

    first = min(jobs["submit"]) if jobs["submit"] else 0.0
    series = data["series"]
    t = np.asarray([*series["t"], data["end_s"]], dtype=float)
    util = math.nan
    if series["util"] and t.size > 1:
        util = float(np.dot(series["util"], np.diff(t)) / max(t[-1] - t[0], 1e-9))
    return {
        "avg_jct_s": mean("jct"),
        "avg_wait_s": mean("wait"),
        "avg_slowdown": mean("slowdown"),
        "makespan_s": max((jobs["finish"][k] for k in done), default=first) - first,
        "gpu_util": util,
    }


def means(per_run: Sequence[tuple[str, Mapping[str, float]]]) -> list[dict[str, Any]]:
    """Per scheduler (first-seen order): runs, and each metric's mean and 95 % half-width."""
    by: dict[str, list[Mapping[str, float]]] = {}
    for scheduler, metrics in per_run:
        by.setdefault(scheduler, []).append(metrics)
    rows = []
    for scheduler, runs in by.items():
        row: dict[str, Any] = {"scheduler": scheduler, "runs": len(runs)}
        for m in MEAN_METRICS:
            values = [r[m] for r in runs if r.get(m) is not None]
            mean = float(np.nanmean(values)) if any(v == v for v in values) else math.nan
            row[m] = [None if mean != mean else round(mean, 4), _none(_ci95(values))]
        rows.append(row)
    return rows


def _none(x: float) -> float | None:
    return None if x != x else round(x, 4)


def render(
    title: str,
    runs: Sequence[RunInput],
    per_run_metrics: Sequence[tuple[str, Mapping[str, float]]] | None = None,
    notes: Sequence[str] = (),
    live: bool = False,
) -> str:
    """The page of ``runs`` (each drawn in full); ``per_run_metrics``: (scheduler, metrics) of
    every run behind the means chart (None: the drawn runs' own, from their logs). ``live``:
    the page follows its server's event stream (`dlsched.report.dashboard`), the only thing
    its security policy then lets it connect to; otherwise it connects to nothing."""
    datas = [run_data(run) for run in runs]
    if per_run_metrics is None:
        per_run_metrics = [(d["scheduler"], run_metrics(d)) for d in datas]
    payload = {
        "title": title,
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "notes": list(notes),
        "runs": datas,
        "means": means(per_run_metrics),
        "bounds": {d["scheduler"]: d["bound_s"] for d in datas},
        "live": live,
    }
    # "</" inside a script element would end it; JSON allows "<\/" for "</"
    data = json.dumps(payload, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    page = _static("report.html")
    for key, value in (
        ("CONNECT", "; connect-src 'self'" if live else ""),
        ("TITLE", _html_escape(title)),
        ("STYLE", _static("report.css")),
        ("DATA", data),
        ("TIMELINE", _static("timeline.js")),
        ("DECISIONS", _static("decisions.js")),
        ("MAIN", _static("main.js")),
    ):
        page = page.replace(f"/*{key}*/", value, 1)
    return page


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def write_page(path: str | Path, html: str, option: str = "--report") -> Path:
    """Write ``html`` to ``path`` (its folder created); ValueError naming ``option`` if not."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
    except OSError as exc:
        raise ValueError(f"{option}: cannot write {str(path)!r}: {exc.strerror or exc}") from None
    return path
