"""The options of one training run, without PyTorch (the CLI builds them; `dlsched.rl.training`
runs them).

`RunOptions` holds what every ``dlsched train`` command shares (``--out``, ``--max-minutes``,
``--tensorboard``, ``--resume``, ``--force``); `RunSettings` adds what the paper's trainer
decides (how many steps, when to validate).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from dlsched.option_fields import Opt
from dlsched.rl.files import LOG_FILE

MAX_MINUTES = 1e6
"""Largest ``--max-minutes``."""


def every(n: int) -> Callable[[int], bool]:
    """A `RunSettings.validate_when` validating after every ``n``-th step."""
    return lambda step: step % n == 0


@dataclass
class RunOptions:
    """The options every ``dlsched train`` command shares (the CLI is generated from these
    fields, `dlsched.commands.config_options`)."""

    out: Path
    """Output folder: policy.pt + card.json (the best by validation), train_log.csv, last/."""
    max_minutes: Annotated[float | None, Opt(min=0.0, max=MAX_MINUTES)] = None
    """Stop after this many minutes of wall time, every phase counted (default: no limit)."""
    tensorboard: Path | None = None
    """Also write the log's rows as TensorBoard scalars here (extra: tensorboard)."""
    resume: Annotated[bool, Opt(flags=("--resume",))] = False
    """Continue from OUT/last/train_state.pt if it exists."""
    force: Annotated[bool, Opt(flags=("--force",))] = False
    """Replace another run's policy, card, log and last/ in OUT (else such an OUT is refused)."""

    def settings(self, steps: int, **schedule: Any) -> RunSettings:
        """`RunSettings` for a run of ``steps`` learner steps (``schedule``: its other fields)."""
        return RunSettings(
            out=Path(self.out),
            steps=steps,
            max_seconds=None if self.max_minutes is None else 60.0 * self.max_minutes,
            resume=self.resume,
            force=self.force,
            tensorboard=self.tensorboard,
            **schedule,
        )


@dataclass
class RunSettings:
    """How one training run goes (module docstring).

    Attributes:
        out: the output folder (created).
        steps: learner steps in all (a resumed run counts those done before).
        max_seconds: wall-time budget of this call in seconds (None: no limit).
        validate_when: validate after the step with this 1-based number (besides the last
            step and the one spending the budget).
        validate_first: also validate the learner as built, before its first step (a
            candidate for the best; no log row).
        resume: continue from ``OUT/last/train_state.pt`` if there is one.
        force: a fresh run into an ``OUT`` holding another run removes that run's files.
        tensorboard: also write the log rows as TensorBoard scalars here (None: no).
        log_path: the CSV log (None: ``OUT/train_log.csv``).
        step_column: the log column holding each row's TensorBoard step (None: the run's step
            count).
        name: names the run in log lines (``"deeprm"``).
    """

    out: Path
    steps: int
    max_seconds: float | None = None
    validate_when: Callable[[int], bool] = field(default=every(1))
    validate_first: bool = False
    resume: bool = False
    force: bool = False
    tensorboard: Path | None = None
    log_path: Path | None = None
    step_column: str | None = None
    name: str = "training"

    @property
    def log_file(self) -> Path:
        return self.log_path if self.log_path is not None else self.out / LOG_FILE
