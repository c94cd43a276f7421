"""Progress off a terminal (`dlsched.commands.progress_lines`): the lines Rich's disabled
`Progress` gave, without Rich; on a terminal, Rich's live bar (issue 34)."""

from __future__ import annotations

import pytest
from rich.progress import Progress

from dlsched.commands.common import progress_bar
from dlsched.commands.progress_lines import LineProgress


def _lines(progress: LineProgress, printed: list[str]) -> list[str]:
    printed.clear()
    progress.print_lines()
    return [line.rsplit(", ", 1)[0] for line in printed]  # without the elapsed seconds


def test_a_line_per_started_unfinished_task_as_rich_counted_it() -> None:
    printed: list[str] = []
    with LineProgress(0, printed.append) as progress:
        runs = progress.add_task("philly · fifo", total=None)
        seeds = progress.add_task("seeds", total=3, val="")
        progress.add_task("later", start=False)
        progress.update(runs, completed=1_200, total=1_511)
        progress.advance(seeds, 2)
        progress.update(seeds, val="val JCT 7,015 s")
        assert _lines(progress, printed) == ["philly · fifo: 1,200/1,511", "seeds: 2/3"]
        assert printed[1].endswith(" s · val JCT 7,015 s")
        progress.advance(seeds)  # 3 of 3: finished, no more lines
        progress.update(runs, advance=311)
        assert _lines(progress, printed) == []
        progress.update(seeds, total=4)  # a new total starts it over, as in Rich
        assert _lines(progress, printed) == ["seeds: 3/4"]


def test_off_a_terminal_no_rich_bar(capsys: pytest.CaptureFixture[str]) -> None:
    assert isinstance(progress_bar(), LineProgress)


def test_on_a_terminal_rich_draws_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # Rich then treats stderr as a terminal
    assert isinstance(progress_bar(), Progress)
