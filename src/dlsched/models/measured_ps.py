"""`MeasuredPS`: speed of parameter-server jobs interpolated from DL2's testbed measurements.

The data is ``data/dl2_speed_measurements.txt`` (DL2's ``config_speed.txt``; sources in
``data/README.md``): for 8 models, the per-worker training speed measured under many
(#PS, #workers) pairs. As in DL2's ``speed.py``:

* a job's speed is the **sum** of its per-worker speeds, read as mini-batches (steps) per second;
* it is interpolated over (#PS, #workers) per model with a linear radial-basis function
  (`scipy.interpolate.RBFInterpolator` with ``kernel="linear"``), which passes exactly through
  every measured point.

Rows whose speed is 0.0 (8 of vgg-16, 1 of inception-bn) are failed measurements and are left
out. Speeds are converted to **epochs per second** by dividing by the model's steps per epoch
(`STEPS_PER_EPOCH`).

Beyond the measured range the rule is *clamping*: each count is capped at the largest count
measured for that model (e.g. 23 PS and 12 workers for resnet-50), so adding tasks past what was
measured never changes the speed — it neither helps nor hurts. Interpolated values are floored at
0. A job with no PS or no worker does not train (speed 0).
"""

from __future__ import annotations

import ast
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, Arch, JobSpec

log = logging.getLogger(__name__)

DATA_FILE = "dl2_speed_measurements.txt"

STEPS_PER_EPOCH: Mapping[str, float] = {
    "resnet-50": 115.0,
    "vgg-16": 115.0,
    "resnext-110": 390.0,
    "inception-bn": 120.0,
    "seq2seq": 780.0,
    "cnn-text-classification": 193.0,
    "dssm": 349.0,
    "wlm": 165.0,
}
"""Mini-batches (steps, summed over workers) in one epoch of each model's (downscaled) dataset.

Source: ``epoch_sizes`` in DL2's ``trace.py`` (GitHub ``pengyanghua/DL2``), which its simulator
uses exactly this way: ``epochs = speed_func(ps, workers) * slot_seconds / epoch_size``. (Its
comment calls them "samples per batch", but the code divides a steps-per-second speed by them to
get epochs.) DL2 §6.2 says the large datasets were downscaled so jobs finish in reasonable
time, which is why these are small. Only the ratio matters to a scheduler: job lengths are
drawn in epochs *from* this table (see `dlsched.workloads.dl2`), so durations are calibrated in
seconds whatever the table says.
"""


@dataclass(frozen=True)
class Measurement:
    """One row of the data file.

    Attributes:
        model: model name, e.g. ``"resnet-50"``.
        batch_size: the job's total (global) batch size, samples.
        num_ps: parameter servers.
        num_workers: workers.
        speed: summed per-worker speed, mini-batches (steps) per second; 0.0 = failed.
    """

    model: str
    batch_size: int
    num_ps: int
    num_workers: int
    speed: float


def data_path() -> Path:
    """Path of the packaged measurement file."""
    return Path(str(resources.files("dlsched").joinpath("data", DATA_FILE)))


@lru_cache(maxsize=4)
def read_rows(path: Path | None = None) -> tuple[Measurement, ...]:
    """Every row of the measurement file (failed 0.0 rows included), in file order.

    Args:
        path: the file; None reads the packaged copy.

    Raises:
        ValueError: a line that is not a well-formed measurement tuple (with its line number).
    """
    rows: list[Measurement] = []
    text = (path or data_path()).read_text()
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            model, _mode, batch, num_ps, num_workers, speeds, _ps_cpu, _w_cpu = ast.literal_eval(
                line
            )
            rows.append(
                Measurement(str(model), int(batch), int(num_ps), int(num_workers), sum(speeds))
            )
        except (ValueError, SyntaxError, TypeError) as err:
            raise ValueError(f"{path or data_path()}:{lineno}: bad measurement: {err}") from err
    return tuple(rows)


def load_measurements(
    path: Path | None = None, *, include_failed: bool = False
) -> dict[str, dict[tuple[int, int], float]]:
    """The raw table: model → {(num_ps, num_workers): summed speed in steps/s}.

    Args:
        path: the file; None reads the packaged copy.
        include_failed: keep the 0.0 rows (failed measurements); left out by default.
    """
    table: dict[str, dict[tuple[int, int], float]] = {}
    for row in read_rows(path):
        if row.speed > 0.0 or include_failed:
            table.setdefault(row.model, {})[(row.num_ps, row.num_workers)] = row.speed
    return table


def batch_sizes(path: Path | None = None) -> dict[str, int]:
    """Model → total batch size (samples) of its measurements (Optimus' ``M``)."""
    return {row.model: row.batch_size for row in read_rows(path)}


class _ModelTable:
    """Interpolated steps/s of one model on the clamped grid 0..max_ps × 0..max_workers."""

    def __init__(self, points: Mapping[tuple[int, int], float]) -> None:
        coords = np.array(list(points), dtype=np.float64)
        values = np.array(list(points.values()), dtype=np.float64)
        self.max_ps = int(coords[:, 0].max())
        self.max_workers = int(coords[:, 1].max())
        from scipy.interpolate import RBFInterpolator  # SciPy's import costs ~0.5 s

        rbf = RBFInterpolator(coords, values, kernel="linear")
        grid = np.array(
            [(p, w) for p in range(1, self.max_ps + 1) for w in range(1, self.max_workers + 1)],
            dtype=np.float64,
        )
        table: npt.NDArray[np.float64] = np.zeros((self.max_ps + 1, self.max_workers + 1))
        table[1:, 1:] = np.maximum(rbf(grid), 0.0).reshape(self.max_ps, self.max_workers)
        table.flags.writeable = False
        self.table = table

    def steps_per_s(self, num_ps: int, num_workers: int) -> float:
        if num_ps <= 0 or num_workers <= 0:
            return 0.0
        return float(self.table[min(num_ps, self.max_ps), min(num_workers, self.max_workers)])


@lru_cache(maxsize=64)
def _model_table(path: Path | None, model: str) -> _ModelTable:
    """One model's interpolant, shared by every `MeasuredPS` reading the same file."""
    return _ModelTable(load_measurements(path)[model])


class MeasuredPS:
    """Throughput model of DL2's PS jobs, from the testbed measurements.

    ``speed`` depends only on the job's model and its (#PS, #workers) — the measurements were
    taken with tasks spread by load balancing, so placement is already folded in. Results are
    cached per (model, #PS, #workers); each model's interpolant is built on first use.

    Args:
        steps_per_epoch: model → steps per epoch; default `STEPS_PER_EPOCH`.
        path: measurement file; None reads the packaged copy.
    """

    name = "measured_ps"

    def __init__(
        self, steps_per_epoch: Mapping[str, float] | None = None, path: Path | None = None
    ) -> None:
        self.steps_per_epoch = dict(STEPS_PER_EPOCH if steps_per_epoch is None else steps_per_epoch)
        self._path = path
        self._points = load_measurements(path)
        self._tables: dict[str, _ModelTable] = {}
        self._cache: dict[tuple[str, int, int], float] = {}

    @property
    def models(self) -> tuple[str, ...]:
        """Models with measurements, in file order."""
        return tuple(self._points)

    def max_counts(self, model: str) -> tuple[int, int]:
        """(#PS, #workers) beyond which more tasks do not change the model's speed."""
        table = self._table(model)
        return table.max_ps, table.max_workers

    def steps_per_s(self, model: str, num_ps: int, num_workers: int) -> float:
        """Interpolated summed speed in mini-batches (steps) per second."""
        return self._table(model).steps_per_s(num_ps, num_workers)

    def epochs_per_s(self, model: str, num_ps: int, num_workers: int) -> float:
        """Speed in epochs per second of ``model`` with these counts (cached)."""
        key = (model, num_ps, num_workers)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        steps = self.steps_per_s(model, num_ps, num_workers)
        if model not in self.steps_per_epoch:
            raise ValueError(f"no steps-per-epoch for model {model!r}")
        value = steps / self.steps_per_epoch[model]
        self._cache[key] = value
        return value

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        """Epochs per second of ``spec`` under ``alloc`` (0.0 without a PS or a worker)."""
        if spec.arch is not Arch.PS:
            raise ValueError(f"job {spec.job_id}: MeasuredPS models PS jobs, got {spec.arch}")
        return self.epochs_per_s(spec.model, alloc.num_ps, alloc.num_workers)

    def ideal_speed(self, spec: JobSpec) -> float:
        """Epochs per second at the job's requested (#PS, #workers)."""
        if spec.arch is not Arch.PS:
            raise ValueError(f"job {spec.job_id}: MeasuredPS models PS jobs, got {spec.arch}")
        return self.epochs_per_s(spec.model, spec.num_ps, spec.num_workers)

    def best_speed(self, spec: JobSpec) -> float:
        """Highest epochs per second over 1..max_ps PS and 1..max_workers workers (measured
        speeds are not monotone in the counts, so every pair is tried)."""
        if spec.arch is not Arch.PS:
            raise ValueError(f"job {spec.job_id}: MeasuredPS models PS jobs, got {spec.arch}")
        table = self._table(spec.model)
        top_ps = min(max(spec.max_ps, spec.num_ps), table.max_ps)
        top_workers = min(max(spec.max_workers, spec.num_workers), table.max_workers)
        if top_ps < 1 or top_workers < 1:
            return 0.0
        steps = float(table.table[1 : top_ps + 1, 1 : top_workers + 1].max())
        return steps / self.steps_per_epoch[spec.model]

    def _table(self, model: str) -> _ModelTable:
        table = self._tables.get(model)
        if table is None:
            points = self._points.get(model)
            if points is None:
                raise ValueError(
                    f"no measurements for model {model!r}; known: {', '.join(self._points)}"
                )
            table = _model_table(self._path, model)
            self._tables[model] = table
            log.debug("interpolated %s over %d measured points", model, len(points))
        return table
