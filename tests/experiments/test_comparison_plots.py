"""The comparison figure (issue 36): bars and each scheduler's JCT CDF, log axes on request;
one run's figure names every line it draws."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pytest

import dlsched
from dlsched.experiments import plots
from dlsched.experiments.compare import summarise


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[plt.Figure]:
    kept: list[plt.Figure] = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: kept.append(fig) or Path(path))
    return kept


def test_comparison_has_a_jct_cdf_per_scheduler_and_log_axes(figures: list[plt.Figure]) -> None:
    results = [
        dlsched.simulate("sched2", name, seed, num_jobs=40)
        for seed in (1, 2)
        for name in ("fifo", "sif")
    ]
    plots.plot_comparison(summarise(results), "x.png", log=True, results=results)
    bars, cdfs = figures[0].axes
    assert bars.get_yscale() == "log" and cdfs.get_xscale() == "log"
    assert [t.get_text() for t in cdfs.get_legend().get_texts()] == ["fifo", "sif"]
    plots.plot_comparison(summarise(results), "y.png")
    assert len(figures[1].axes) == 1 and figures[1].axes[0].get_yscale() == "linear"


def test_one_runs_figure_names_the_pending_line(figures: list[plt.Figure]) -> None:
    plots.plot_run(dlsched.simulate("sched2", "sif", 1, num_jobs=40), "run.png")
    names = [t.get_text() for t in figures[0].axes[0].get_legend().get_texts()]
    assert "pending jobs" in names


def test_deeprm_fig6_has_its_csv_and_markdown_and_fig7_defines_its_classes(
    figures: list[plt.Figure], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from dlsched.papers.deeprm import experiments

    monkeypatch.setattr(experiments, "plt", _Closing(figures))
    if experiments.fig6(tmp_path, {}):
        header = (tmp_path / "fig6.csv").read_text().splitlines()[0]
        assert header == ",".join(experiments.FIG6_COLUMNS)
        assert "lowest" in experiments.fig6_lines(tmp_path)[0]
    experiments.fig7(tmp_path, experiments.Size((1.1,), 1, 1, 1, 1, "tiny"))
    fig = figures[-1]
    left, right = fig.axes
    assert left.get_ylabel() != "count" and right.get_title()
    ticks = [t.get_text() for t in right.get_xticklabels()]
    assert ticks == ["short jobs (1–3 steps)", "long jobs (10–15 steps)"]
    from matplotlib.container import BarContainer

    bars = [c for c in right.containers if isinstance(c, BarContainer)]
    assert len(bars) == 3 and all(b.errorbar is not None for b in bars)  # a 95 % CI each


class _Closing:
    """``plt`` whose figures are kept (to be read) instead of written."""

    def __init__(self, kept: list[plt.Figure]) -> None:
        self.kept = kept

    def subplots(self, *args: object, **kwargs: object) -> object:
        fig, axes = plt.subplots(*args, **kwargs)
        fig.savefig = lambda *a, **k: None  # type: ignore[method-assign]
        self.kept.append(fig)
        return fig, axes

    def close(self, fig: plt.Figure) -> None:
        pass
