"""The pollux experiment's report, on made-up rows (the real run takes minutes)."""

from __future__ import annotations

from pathlib import Path

from dlsched.experiments.pollux import GENERIC, LOADS, PAPER, _plot_load, _write_markdown
from dlsched.experiments.registry import EXPERIMENTS


def _rows(load: float = 1.0) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for workload in range(1, 9):
        jct = {"Pollux": 2000.0, "Optimus+Oracle+TunedJobs": 5000.0, "Tiresias+TunedJobs": 3000.0}
        if workload == 3:  # one workload out of order
            jct["Pollux"] = 4000.0
        for label, scheduler, jobs in PAPER + GENERIC:
            rows.append(
                {
                    "workload": workload,
                    "load": load,
                    "policy": label,
                    "scheduler": scheduler,
                    "jobs": jobs,
                    "avg_jct_s": jct.get(label, 9000.0) * load,
                }
            )
    return rows


def test_report_counts_the_ordering_and_compares_with_the_paper(tmp_path: Path) -> None:
    rows = _rows()
    load_rows = [r for x in LOADS for r in _rows(x) if r["workload"] == 6]
    md = _write_markdown(tmp_path / "pollux.md", rows, load_rows, full=False).read_text()
    assert "holds on 7 of 8 workloads" in md
    assert "| Pollux | 2,000 | 2,446 | -18.2 % |" in md
    assert "reduced" in md
    png = _plot_load(tmp_path / "load.png", load_rows)
    assert png.stat().st_size > 1000
    assert "pollux" in EXPERIMENTS
