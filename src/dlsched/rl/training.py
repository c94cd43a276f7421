"""One training run for every learned scheduler: budget, validation, best policy, log, resume.

CleanRL style: a paper's algorithm keeps only its learning step, as a `Learner`; `train` does
everything else, the same way for every paper (``dlsched train dl2|deeprm|sched2``):

* **budget** — ``max_seconds`` (the CLI's ``--max-minutes``) is counted from before the learner
  is built, so it covers every phase (validation sets, teacher data, pre-training); no step
  starts once it is spent, and the step that spends it is validated;
* **validate → keep best** — after each step `RunSettings.validate_when` picks, after the last
  step and after the step that spent the budget, `Learner.validate` scores the policy; one with
  a lower `Validation.rank` than every earlier one is written to ``OUT/policy.pt`` +
  ``OUT/card.json`` (`dlsched.rl.checkpoint`); a run that ends before any validation validates
  once, so ``OUT`` always holds this run's policy;
* **checkpoint + resume** — every validation also writes ``OUT/last/`` (the current policy and
  ``train_state.pt``: the learner's `Learner.state_dict` and the run's counters, tensors and
  plain containers only); ``resume=True`` continues from it, a damaged one is a `ResumeError`
  naming the file;
* **log** — one row per step in ``OUT/train_log.csv`` (`dlsched.csv_rows.CsvLog`): the learner's
  columns, the validation's entries and ``wall_s``, the seconds since training started,
  continued across resumes; the same rows as TensorBoard scalars with ``tensorboard=DIR``
  (Stable-Baselines3's ``logger.configure(["csv", "tensorboard"])``), tags prefixed by a
  row's ``phase`` column if it has one;
* **progress** — ``progress(steps_done, row)`` after each row, and a log line per validation;
* **a fresh run never reports an old policy** — ``OUT`` holding another run's policy, card, log
  or ``last/`` is refused unless ``force=True``, which removes those (and only those) first.

The `Learner` protocol (what a paper implements)
------------------------------------------------
``columns``
    the log columns, in order (``wall_s`` and the validation's entries among them).
``step() -> dict``
    one unit of learning (an iteration, an episode, a chunk of updates); returns its log row.
``validate() -> Validation``
    scores the current policy on held-out data (its rank and its log entries).
``policy_files() -> (state_dict, PolicyCard)``
    the current policy as checkpoint files, its card describing the last validation.
``state_dict() -> dict`` / ``load_state_dict(state)``
    everything a resumed run needs (network, optimiser, counters, generators), as tensors and
    plain containers (`torch.load` reads it back with ``weights_only=True``).

Example::

    settings = RunSettings(out=Path("runs/x"), steps=1000, max_seconds=600.0)
    result = train(lambda budget: MyLearner(config), settings)
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch

from dlsched.csv_rows import CsvLog
from dlsched.rl.checkpoint import PolicyCard, save_checkpoint
from dlsched.rl.files import CARD_FILE, ELAPSED_COLUMN, POLICY_FILE
from dlsched.rl.run_options import RunOptions, RunSettings, every
from dlsched.rl.tensorboard import CurveMirror, open_mirror

__all__ = [
    "Budget",
    "Learner",
    "Progress",
    "ResumeError",
    "RunOptions",
    "RunResult",
    "RunSettings",
    "Validation",
    "every",
    "train",
]

log = logging.getLogger(__name__)

VALIDATION_GRACE = 0.1
"""Share of the budget a validation may run past it (`Budget.validation_over`)."""
VALIDATION_GRACE_MAX_S = 60.0
"""Most seconds a validation may run past the budget."""
LAST_DIR = "last"
"""``OUT/last/``: the latest policy and `TRAIN_STATE`, written at every validation."""
TRAIN_STATE = "train_state.pt"
STATE_VERSION = 2
"""Version of `TRAIN_STATE`'s layout (1 was DL2's own, before this module)."""


class ResumeError(ValueError):
    """``resume`` cannot continue from ``OUT/last/train_state.pt`` (the message names it)."""


@dataclass(frozen=True)
class Validation:
    """One validation of a learner's policy.

    Attributes:
        rank: lower is better, compared element by element (DL2: ``(probes stalled, average
            JCT in s)``; SCED²: ``(-effectiveness,)``).
        row: entries for the log row of the step it follows (column → value).
    """

    rank: tuple[float, ...]
    row: dict[str, object] = field(default_factory=dict)


class Learner(Protocol):
    """What a paper's algorithm implements for `train` (module docstring)."""

    @property
    def columns(self) -> Sequence[str]: ...

    def step(self) -> dict[str, object]: ...

    def validate(self) -> Validation: ...

    def policy_files(self) -> tuple[Mapping[str, torch.Tensor], PolicyCard]: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None: ...


class Budget:
    """The wall-clock budget of one `train` call, counted from the budget's creation.

    Args:
        seconds: the budget (None: no limit).
    """

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._t0 = time.perf_counter()

    def elapsed_s(self) -> float:
        """Seconds since the call started."""
        return time.perf_counter() - self._t0

    def left_s(self) -> float:
        """Seconds left (infinite without a budget, 0 once spent)."""
        return float("inf") if self.seconds is None else max(0.0, self.seconds - self.elapsed_s())

    def spent(self) -> bool:
        """Whether the budget is spent."""
        return self.seconds is not None and self.elapsed_s() >= self.seconds

    def validation_over(self) -> bool:
        """Whether a validation must stop: the budget and a grace after it spent (a learner
        that can cut its validation asks this, so that the validation of the step that spent
        the budget still gets `VALIDATION_GRACE` of it, at most `VALIDATION_GRACE_MAX_S`)."""
        if self.seconds is None:
            return False
        grace = min(VALIDATION_GRACE * self.seconds, VALIDATION_GRACE_MAX_S)
        return self.elapsed_s() >= self.seconds + grace


@dataclass
class RunResult:
    """What a run reached.

    Attributes:
        out: the folder of the best policy.
        best: its validation (None only if the learner never validated).
        best_step: the step after which it was validated (0: before the first).
        steps: steps done, resumed ones included.
        wall_s: seconds of training, resumed runs' included.
        out_of_time: the budget stopped the run before its last step.
    """

    out: Path
    best: Validation | None
    best_step: int
    steps: int
    wall_s: float
    out_of_time: bool


Progress = Callable[[int, Mapping[str, object]], None]
"""``progress(steps_done, row)`` after each log row."""


def train(
    make_learner: Callable[[Budget], Learner],
    settings: RunSettings,
    progress: Progress | None = None,
) -> RunResult:
    """Run ``make_learner(budget)``'s learner under ``settings`` (module docstring).

    Raises:
        ValueError: ``OUT`` holds another run (and not ``force``), or a resumed log has other
            columns.
        ResumeError: ``OUT/last/train_state.pt`` is damaged or does not fit this learner.
    """
    budget = Budget(settings.max_seconds)
    state = _prepare_out(settings)
    learner = make_learner(budget)
    run = _Run(learner, settings, budget, state)
    keep_rows = int(state["run"]["rows"]) if state is not None else None
    with (
        CsvLog(
            settings.log_file, learner.columns, append=state is not None, keep_rows=keep_rows
        ) as csv_log,
        _mirror(settings.tensorboard) as mirror,
    ):
        run.loop(csv_log, mirror, progress)
    return RunResult(
        settings.out, run.best, run.best_step, run.steps_done, run.wall_s(), run.out_of_time
    )


class _Run:
    """Counters and best-so-far of one `train` call."""

    def __init__(
        self,
        learner: Learner,
        settings: RunSettings,
        budget: Budget,
        state: Mapping[str, Any] | None,
    ) -> None:
        self.learner = learner
        self.settings = settings
        self.budget = budget
        self.steps_done = 0
        self.rows = 0
        self.wall_before_s = 0.0
        self.best: Validation | None = None
        self.best_step = 0
        self.out_of_time = False
        if state is not None:
            self._restore(state)

    def _restore(self, state: Mapping[str, Any]) -> None:
        counters = state["run"]
        path = self.settings.out / LAST_DIR / TRAIN_STATE
        try:
            self.learner.load_state_dict(state["learner"])
            self.steps_done = int(counters["steps"])
            self.rows = int(counters["rows"])
            self.wall_before_s = float(counters["wall_s"])
            if counters["best_rank"] is not None:
                self.best = Validation(tuple(float(x) for x in counters["best_rank"]))
                self.best_step = int(counters["best_step"])
        except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as exc:
            raise ResumeError(f"{path}: does not fit this run ({_first_line(exc)})") from None
        log.info("%s: resumed from %s at step %d", self.settings.name, path, self.steps_done)

    def wall_s(self) -> float:
        """Seconds of training so far, resumed runs' included."""
        return self.wall_before_s + self.budget.elapsed_s()

    def loop(self, csv_log: CsvLog, mirror: CurveMirror | None, progress: Progress | None) -> None:
        settings = self.settings
        if settings.validate_first and self.steps_done == 0:
            self._validate({}, logged=False)  # the starting point: a candidate, no log row
        validated = self.best is not None
        while self.steps_done < settings.steps:
            if self.budget.spent():
                self._stop_for_time()
                break
            row = dict(self.learner.step())
            row.pop(ELAPSED_COLUMN, None)  # the run's clock, not the learner's
            self.steps_done += 1
            over = self.budget.spent()
            if over or self.steps_done == settings.steps or settings.validate_when(self.steps_done):
                if over:
                    self._stop_for_time()
                self._validate(row)
                validated = True
            self._write(row, csv_log, mirror, progress)
            if over:
                break
        if not validated:  # nothing validated yet: OUT must still hold this run's policy
            row = {}
            self._validate(row)
            self._write(row, csv_log, mirror, progress)

    def _stop_for_time(self) -> None:
        if not self.out_of_time:
            log.warning(
                "%s: wall-time budget of %.0f s spent: training stops here",
                self.settings.name,
                self.settings.max_seconds,
            )
        self.out_of_time = True

    def _validate(self, row: dict[str, object], *, logged: bool = True) -> None:
        """Validate, keep the policy if best, write ``OUT/last``; adds the entries to ``row``
        (``logged``: the row goes to the log)."""
        validation = self.learner.validate()
        row.update(validation.row)
        state, card = self.learner.policy_files()
        if self.settings.max_seconds is not None:  # how it was made: under which budget
            card.hyperparams.setdefault("max_minutes", self.settings.max_seconds / 60.0)
        if self.out_of_time:
            card.notes += f"; stopped by the wall-time budget of {self.settings.max_seconds:.0f} s"
        improved = self.best is None or validation.rank < self.best.rank
        if improved:
            self.best, self.best_step = validation, self.steps_done
            save_checkpoint(self.settings.out, state, card)
        wall_s = round(self.wall_s(), 3)
        row[ELAPSED_COLUMN] = wall_s  # the row and the resumable state agree on it
        self._checkpoint_last(state, card, rows=self.rows + int(logged), wall_s=wall_s)
        log.info(
            "%s step %d/%d: validation %s%s, %.0f s",
            self.settings.name,
            self.steps_done,
            self.settings.steps,
            ", ".join(f"{k} {_fmt(v)}" for k, v in validation.row.items()),
            " (best so far)" if improved else "",
            self.wall_s(),
        )

    def _checkpoint_last(
        self, policy: Mapping[str, torch.Tensor], card: PolicyCard, rows: int, wall_s: float
    ) -> None:
        last = self.settings.out / LAST_DIR
        save_checkpoint(last, policy, card)
        best = self.best
        state = {
            "version": STATE_VERSION,
            "run": {
                "steps": self.steps_done,
                "rows": rows,
                "wall_s": wall_s,
                "best_rank": None if best is None else [float(x) for x in best.rank],
                "best_step": self.best_step,
            },
            "learner": self.learner.state_dict(),
        }
        tmp = last / (TRAIN_STATE + ".tmp")
        torch.save(state, tmp)
        tmp.replace(last / TRAIN_STATE)

    def _write(
        self,
        row: dict[str, object],
        csv_log: CsvLog,
        mirror: CurveMirror | None,
        progress: Progress | None,
    ) -> None:
        row.setdefault(ELAPSED_COLUMN, round(self.wall_s(), 3))
        csv_log.write(row)
        self.rows += 1
        if mirror is not None:
            column = self.settings.step_column
            step = self.steps_done if column is None else int(str(row[column]))
            mirror.add(row, step, str(row.get("phase", "")))
        if progress is not None:
            progress(self.steps_done, row)


class _NoMirror:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _mirror(directory: Path | None) -> Any:
    """A `CurveMirror` context for ``directory``, or one yielding None."""
    mirror = open_mirror(directory)
    return _NoMirror() if mirror is None else mirror


def _prepare_out(settings: RunSettings) -> dict[str, Any] | None:
    """Check ``OUT`` for this run; returns the state to resume from (None: a fresh run).

    Raises:
        ValueError: a fresh run into a folder holding another run's files, without ``force``.
        ResumeError: the state to resume from is damaged.
    """
    out = settings.out
    state_path = out / LAST_DIR / TRAIN_STATE
    if settings.resume and state_path.exists():
        return _load_state(state_path)
    present = [
        p
        for p in (out / POLICY_FILE, out / CARD_FILE, out / LAST_DIR, settings.log_file)
        if p.exists()
    ]
    if present and not settings.force:
        names = ", ".join(p.name for p in present)
        if settings.resume:
            raise ValueError(
                f"{out}: no {LAST_DIR}/{TRAIN_STATE} to resume from, but it holds another "
                f"training run ({names}); pass --force instead of --resume to replace it"
            )
        raise ValueError(
            f"{out}: holds another training run ({names}); pass --force to replace it or "
            "--resume to continue it"
        )
    for path in present:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    if present:
        log.warning("%s: removed the earlier run's %s (--force)", out, [p.name for p in present])
    out.mkdir(parents=True, exist_ok=True)
    return None


def _load_state(path: Path) -> dict[str, Any]:
    """``train_state.pt`` read without unpickling code; `ResumeError` naming it if damaged."""
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds (zip, unpickling, EOF) for a bad file
        raise ResumeError(f"{path}: cannot resume from it ({_first_line(exc)})") from None
    counters = state.get("run") if isinstance(state, dict) else None
    if (
        not isinstance(state, dict)
        or state.get("version") != STATE_VERSION
        or not isinstance(counters, dict)
        or not isinstance(state.get("learner"), dict)
        or not {"steps", "rows", "wall_s", "best_rank", "best_step"} <= set(counters)
    ):
        raise ResumeError(
            f"{path}: not a training state of this version (move {path.parent} away to start over)"
        )
    return state


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _fmt(value: object) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
