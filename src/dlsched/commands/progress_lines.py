"""Progress off a terminal: no bar, no control codes, a plain line per task every few seconds.

`LineProgress` keeps the part of Rich's `Progress` API the commands use (``add_task``,
``update``, ``advance``, a context manager) and its task rules (a task with a total is finished
once its count reaches it; a new total starts it over), without importing Rich until it prints
a line (start-up, issue 34). `dlsched.commands.common.progress_bar` gives it when stderr is not
a terminal (pipes, CI, ``nohup``), Rich's live bar otherwise.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any


class _Task:
    """One task's description, counts (steps) and fields; times from `time.monotonic` (s)."""

    def __init__(
        self, description: str, started: bool, total: float | None, completed: float, **fields: Any
    ) -> None:
        self.description = description
        self.started = started
        self.total = total
        self.completed = completed
        self.fields = fields
        self.started_s = time.monotonic()
        self.finished = False

    def check_finished(self) -> None:
        if self.total is not None and self.completed >= self.total:
            self.finished = True


class LineProgress:
    """Prints one line per started, unfinished task to stderr (through ``print_line``) every
    ``every_s`` seconds (0: never) from a background thread, also while the caller is busy
    between updates (a long data collection): ``label: done/total, elapsed s · fields``."""

    def __init__(self, every_s: float, print_line: Callable[[str], None]) -> None:
        self.every_s = every_s
        self._print_line = print_line
        self._tasks: dict[int, _Task] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> LineProgress:
        if self.every_s > 0:
            self._ticker = threading.Thread(target=self._tick, name="progress-lines", daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()

    def add_task(
        self,
        description: str,
        start: bool = True,
        total: float | None = 100.0,
        completed: int = 0,
        visible: bool = True,
        **fields: Any,
    ) -> int:
        """A new task (``visible``: no bar); its id."""
        with self._lock:
            task_id = len(self._tasks)
            self._tasks[task_id] = _Task(description, start, total, completed, **fields)
        return task_id

    def update(
        self,
        task_id: int,
        *,
        total: float | None = None,
        completed: float | None = None,
        advance: float | None = None,
        description: str | None = None,
        visible: bool | None = None,
        refresh: bool = False,
        **fields: Any,
    ) -> None:
        """Change a task as Rich's `Progress.update` does (``visible``/``refresh``: no bar)."""
        with self._lock:
            task = self._tasks[task_id]
            if total is not None and total != task.total:
                task.total = total
                task.finished = False
            if advance is not None:
                task.completed += advance
            if completed is not None:
                task.completed = completed
            if description is not None:
                task.description = description
            task.fields.update(fields)
            task.check_finished()

    def advance(self, task_id: int, advance: float = 1) -> None:
        """Add ``advance`` steps to a task."""
        with self._lock:
            task = self._tasks[task_id]
            task.completed += advance
            task.check_finished()

    def _tick(self) -> None:
        while not self._stop.wait(self.every_s):
            self.print_lines()

    def print_lines(self) -> None:
        """One line per started, unfinished task: description, done/total, elapsed, fields."""
        now = time.monotonic()
        with self._lock:
            tasks = [t for t in self._tasks.values() if t.started and not t.finished]
            lines = []
            for task in tasks:
                total = "?" if task.total is None else f"{task.total:,.0f}"
                fields = " ".join(str(v) for v in task.fields.values() if str(v))
                line = f"{task.description}: {task.completed:,.0f}/{total}, "
                line += f"{now - task.started_s:,.0f} s"
                lines.append(line + (f" · {fields}" if fields else ""))
        for line in lines:
            self._print_line(line)
