"""Pollux's goodput model (OSDI'21 §3–4) on its measured profiles: throughput × efficiency.

A Pollux job's progress is counted in *initial-batch-size steps* (what the artifact's simulator
calls ``progress``): at total batch size ``B`` a step advances the job by ``gain(B)``, the
statistical efficiency relative to the initial batch size ``B0`` times ``B / B0``:

    gain_e(B) = (var_e + sqr_e) / (var_e · B0/B + sqr_e)      (Pollux §3.1, eq. 3 via the PGNS)

with ``sqr_e, var_e`` the gradient statistics measured during epoch ``e`` at that batch size
(``validation-BSZ.csv``, linearly interpolated between measured batch sizes). A step takes

    T(B) = step_time + accum_steps · (step_time − sync_time)

seconds, with ``step_time, sync_time`` from ``placements.csv`` (that exact placement, linear in
the local batch size) or otherwise interpolated linearly over (nodes, replicas, local batch
size) on ``placements.csv`` averaged per triple plus ``scalability.csv``. During epoch ``e`` the
job advances ``gain_e(B) / T(B)`` units per second; it finishes when progress reaches the end
of its last epoch (``MAX_EPOCHS``; epoch ``e`` ends at the smallest progress any measured curve
had then).

dlsched's engine gives a job one speed per allocation, so we use the speed that gives the
exact completion time of a job held at one allocation from start to end:
``P / (T(B) · Σ_e ΔP_e / gain_e(B))`` (``P`` total progress, ``ΔP_e`` epoch lengths) — the
harmonic mean of the per-epoch goodputs. A job whose allocation changes mid-training gets the
average rather than its current epoch's efficiency (the one deviation from the artifact).

Jobs name their model ``APP`` (Pollux-managed: the batch size is chosen per allocation, the one
with the highest goodput) or ``APP@BSZ`` (a tuned job with the fixed total batch size ``BSZ``,
as Tiresias+TunedJobs and Optimus+TunedJobs run them); the batch is split into local batches
and gradient-accumulation steps by the artifact's rules (`fixed_batch_config`).
"""

from __future__ import annotations

import csv
import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dlsched.core import Allocation, JobSpec

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "pollux"
GPUS_PER_NODE = 4
MAX_NODES_PROFILED = 16
MAX_EPOCHS: dict[str, int] = {
    "bert": 2,
    "cifar10": 100,
    "ncf": 10,
    "imagenet": 90,
    "deepspeech2": 80,
    "yolov3": 50,
}
"""Training length of each application, epochs (the artifact's `APPLICATIONS`)."""
MAX_LOCAL_BSZ: dict[str, int] = {"yolov3": 8}
"""Local-batch caps overriding the profiles' largest measured local batch (GPU memory)."""
POLLUX_FIXED_BSZ: dict[str, int] = {"ncf": 32768}
"""Applications whose batch size Pollux does not tune (the artifact fixes ncf's)."""
_EPS = 1e-8


def _read_csv(path: Path) -> dict[str, npt.NDArray[np.float64]]:
    with path.open(newline="") as f:
        rows = list(csv.DictReader(f))
    return {k: np.array([float(r[k]) for r in rows]) for k in rows[0]}


@functools.lru_cache(maxsize=65536)
def normalise_placement(placement: tuple[int, ...]) -> tuple[int, ...]:
    """GPUs per node without empty nodes, as its lexicographically smallest rotation."""
    nodes = tuple(n for n in placement if n)
    if not nodes:
        return ()
    return min(nodes[i:] + nodes[:i] for i in range(len(nodes)))


def packed_placement(num_replicas: int) -> tuple[int, ...]:
    """``num_replicas`` GPUs on as few 4-GPU nodes as possible."""
    full, rest = divmod(num_replicas, GPUS_PER_NODE)
    return (GPUS_PER_NODE,) * full + ((rest,) if rest else ())


@dataclass(frozen=True)
class BatchConfig:
    """How a job splits its batch: ``atomic_bsz`` per replica per pass, ``accum_steps`` extra
    passes before each synchronisation; total batch ``replicas · atomic_bsz · (accum+1)``."""

    atomic_bsz: int
    accum_steps: int


class _Linear3D:
    """Piecewise-linear interpolation on the Delaunay triangulation of 3-D points (what SciPy's
    ``LinearNDInterpolator`` computes), with barycentric coordinates from closed-form 3×3
    inverses: SciPy's lazy per-simplex LAPACK setup takes seconds under a threaded BLAS on a
    busy machine; this takes microseconds. NaN outside the points' convex hull.

    A point is interpolated in the first simplex (by index) whose barycentric coordinates are
    all ≥ −10⁻⁹. Only simplices whose bounding box, widened by what that tolerance and the
    rounding of the coordinates allow, holds the point can pass, so only those are computed
    (the same arithmetic on fewer rows); the candidates along each (nodes, replicas) line are
    found once, as the queries come on few such lines."""

    def __init__(self, points: npt.NDArray[np.float64], values: npt.NDArray[np.float64]) -> None:
        from scipy.spatial import Delaunay  # SciPy's import: ~1 s CPU on a busy box

        tri = Delaunay(points)
        corners = points[tri.simplices]  # (S, 4, 3)
        self._origin = corners[:, 0]
        a, b, c = (corners[:, k] - self._origin for k in (1, 2, 3))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        keep = np.abs(det) > 1e-12
        self._rows = np.stack([np.cross(b, c), np.cross(c, a), np.cross(a, b)], axis=1)[keep]
        self._rows /= det[keep][:, None, None]
        self._origin = self._origin[keep]
        self._values = values[tri.simplices[keep]]  # (S, 4, k)
        corners = corners[keep]
        low, high = corners.min(axis=1), corners.max(axis=1)  # (S, 3)
        # A passing point is Σ_k w_k·corner_k with Σ w_k = 1 and every w_k ≥ −(10⁻⁹ + error),
        # so it lies within 4·(10⁻⁹ + error)·width of the box; error bounds the rounding of a
        # computed coordinate (a thousand times the worst case of its 3-term dot product).
        scale = np.abs(points).max() + (high - low).max()
        error = 1e-13 * np.abs(self._rows).sum(axis=(1, 2)) * scale
        widen = (4 * (1e-9 + 4 * error))[:, None] * (high - low) + 1e-9 * (1.0 + scale)
        self._low, self._high = low - widen, high + widen
        self._lines: dict[tuple[float, float], npt.NDArray[np.intp]] = {}

    def _near(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.intp]:
        """Indices (ascending) of the simplices whose widened box holds ``x``."""
        key = (float(x[0]), float(x[1]))
        line = self._lines.get(key)
        if line is None:
            low, high = self._low, self._high
            on_line = (low[:, 0] <= x[0]) & (x[0] <= high[:, 0])
            on_line &= (low[:, 1] <= x[1]) & (x[1] <= high[:, 1])
            line = self._lines[key] = np.flatnonzero(on_line)
        return line[(self._low[line, 2] <= x[2]) & (x[2] <= self._high[line, 2])]

    def __call__(self, x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        near = self._near(x)
        d = x - self._origin[near]  # (S', 3)
        lam = np.einsum("sij,sj->si", self._rows[near], d)
        bary = np.concatenate([1.0 - lam.sum(axis=1, keepdims=True), lam], axis=1)
        inside = np.flatnonzero(np.all(bary >= -1e-9, axis=1))
        if inside.size == 0:
            return np.full(self._values.shape[2], np.nan)
        s = inside[0]
        return np.asarray(bary[s] @ self._values[near[s]])


class Profile:
    """One application's measured profiles (``data/pollux/profiles/APP``)."""

    def __init__(self, name: str, root: Path = DATA_DIR / "profiles") -> None:
        self.name = name
        folder = root / name
        place = _read_csv(folder / "placements.csv")
        scal = _read_csv(folder / "scalability.csv")
        by_placement: dict[tuple[int, ...], list[tuple[float, float, float]]] = {}
        triples: dict[tuple[float, float, float], list[tuple[float, float]]] = {}
        for p, b, st, sy in zip(
            place["placement"],
            place["local_bsz"],
            place["step_time"],
            place["sync_time"],
            strict=True,
        ):
            digits = tuple(int(c) for c in str(int(p)))
            by_placement.setdefault(digits, []).append((b, st, sy))
            key = (float(len(digits)), float(sum(digits)), b)
            triples.setdefault(key, []).append((st, sy))
        self._placements = {
            k: np.array(sorted(v)).T for k, v in by_placement.items()
        }  # placement -> (3, n): local_bsz, step, sync
        xs = [list(k) for k in triples] + [
            [n, r, b]
            for n, r, b in zip(
                scal["num_nodes"], scal["num_replicas"], scal["local_bsz"], strict=True
            )
        ]
        ys = [list(np.mean(v, axis=0)) for v in triples.values()] + [
            [st, sy] for st, sy in zip(scal["step_time"], scal["sync_time"], strict=True)
        ]
        self.nd_points, self.nd_values = np.array(xs, dtype=float), np.array(ys, dtype=float)
        curves: dict[int, dict[str, npt.NDArray[np.float64]]] = {}
        for path in folder.glob("validation-*.csv"):
            curves[int(path.stem.split("-")[1])] = _read_csv(path)
        self.batch_sizes = np.array(sorted(curves), dtype=float)
        self.max_epochs = MAX_EPOCHS[name]
        ordered = [curves[int(b)] for b in self.batch_sizes]
        self.grad_sqr = np.array([c["grad_sqr"][: self.max_epochs] for c in ordered])
        self.grad_var = np.array([c["grad_var"][: self.max_epochs] for c in ordered])
        ends = np.min([c["progress"][: self.max_epochs] for c in ordered], axis=0)
        self.epoch_ends = ends  # progress at the end of each epoch
        self.epoch_lengths = np.diff(np.concatenate(([0.0], ends)))
        self.total_progress = float(ends[-1])
        self.init_bsz = int(self.batch_sizes[0])
        self.max_bsz = int(self.batch_sizes[-1])
        self.min_local_bsz = int(place["local_bsz"].min())
        self.max_local_bsz = MAX_LOCAL_BSZ.get(name, int(place["local_bsz"].max()))

    @functools.cached_property
    def _nd(self) -> _Linear3D:
        """The interpolant over (nodes, replicas, local batch), built on first use: building a
        workload reads only the sizes above (a refused run never imports SciPy)."""
        return _Linear3D(self.nd_points, self.nd_values)

    @functools.cache  # noqa: B019 - profiles live for the whole process
    def step_sync_s(self, placement: tuple[int, ...], atomic_bsz: float) -> tuple[float, float]:
        """(step time, sync time) in seconds of one step at this placement and local batch."""
        placement = normalise_placement(placement)
        table = self._placements.get(placement)
        if table is not None:
            b = float(np.clip(atomic_bsz, table[0][0], table[0][-1]))
            return float(np.interp(b, table[0], table[1])), float(np.interp(b, table[0], table[2]))
        nodes = min(len(placement), MAX_NODES_PROFILED)
        step, sync = self._nd(np.array([nodes, sum(placement), atomic_bsz], dtype=float))
        if not (math.isfinite(step) and math.isfinite(sync)):
            raise ValueError(f"{self.name}: no profile covers {placement} at local {atomic_bsz}")
        return float(step), float(sync)

    @functools.cache  # noqa: B019
    def grad_stats(self, batch_size: float) -> tuple[npt.NDArray[np.float64], ...]:
        """Per-epoch (grad_sqr, grad_var) at ``batch_size``, interpolated linearly (read-only)."""
        sqr, var = self._grad_stats(batch_size)
        sqr, var = sqr.view(), var.view()
        sqr.flags.writeable = var.flags.writeable = False
        return sqr, var

    def _grad_stats(self, batch_size: float) -> tuple[npt.NDArray[np.float64], ...]:
        b = float(np.clip(batch_size, self.batch_sizes[0], self.batch_sizes[-1]))
        hi = int(np.searchsorted(self.batch_sizes, b))
        if self.batch_sizes[hi] == b:
            return self.grad_sqr[hi], self.grad_var[hi]
        lo = hi - 1
        w = (b - self.batch_sizes[lo]) / (self.batch_sizes[hi] - self.batch_sizes[lo])
        sqr = (1 - w) * self.grad_sqr[lo] + w * self.grad_sqr[hi]
        var = (1 - w) * self.grad_var[lo] + w * self.grad_var[hi]
        return sqr, var

    def gains(self, batch_size: float) -> npt.NDArray[np.float64]:
        """Per-epoch progress per step at ``batch_size`` (efficiency × B / B0)."""
        sqr, var = self.grad_stats(batch_size)
        scale = batch_size / self.init_bsz
        denom = var / scale + sqr
        return np.where(denom > 0, (var + sqr) / np.where(denom > 0, denom, 1.0), 1.0)

    @functools.cache  # noqa: B019
    def steps_per_progress(self, batch_size: int) -> float:
        """Steps needed to finish the whole job at ``batch_size``, per unit of progress."""
        return float(np.sum(self.epoch_lengths / self.gains(batch_size))) / self.total_progress

    def step_time_s(self, placement: tuple[int, ...], cfg: BatchConfig) -> float:
        """Seconds per optimiser step, accumulation passes included."""
        step, sync = self.step_sync_s(normalise_placement(placement), float(cfg.atomic_bsz))
        return step + cfg.accum_steps * (step - sync)

    def goodput(self, placement: tuple[int, ...], cfg: BatchConfig) -> float:
        """Progress units per second at this placement and batch split (job-average)."""
        replicas = sum(placement)
        batch = replicas * cfg.atomic_bsz * (cfg.accum_steps + 1)
        return 1.0 / (self.step_time_s(placement, cfg) * self.steps_per_progress(batch))

    def fixed_batch_config(self, batch_size: int, replicas: int) -> BatchConfig:
        """The artifact's split of a fixed total batch over ``replicas`` replicas."""
        local = math.ceil(batch_size / replicas - _EPS)
        accum = math.ceil(local / self.max_local_bsz - _EPS) - 1
        if replicas == 1 and batch_size > self.init_bsz:
            accum = max(1, accum)
        atomic = math.ceil(local / (accum + 1) - _EPS)
        atomic = min(atomic, int(self.max_bsz / (replicas * (accum + 1))))
        return BatchConfig(max(atomic, 1), accum)

    def candidate_configs(self, replicas: int) -> list[BatchConfig]:
        """Pollux's candidate batch splits: 50 total batch sizes, geometric, per replica count."""
        low = max(self.init_bsz, self.min_local_bsz * replicas)
        if low > self.max_bsz:
            return []
        out: list[BatchConfig] = []
        for b in np.geomspace(low, self.max_bsz, 50):
            local = b / replicas
            accum = math.ceil(local / self.max_local_bsz - _EPS) - 1
            if replicas == 1 and local > self.init_bsz + _EPS:
                accum = max(accum, 1)
            atomic = math.ceil(local / (accum + 1) - _EPS)
            if not self.min_local_bsz <= atomic <= self.max_local_bsz:
                continue
            atomic = min(atomic, int(self.max_bsz / (replicas * (accum + 1))))
            out.append(BatchConfig(atomic, accum))
        return out

    @functools.cache  # noqa: B019
    def best_config(self, placement: tuple[int, ...]) -> tuple[BatchConfig | None, float]:
        """The batch split with the highest true goodput at ``placement`` (and that goodput)."""
        best: tuple[BatchConfig | None, float] = (None, 0.0)
        for cfg in self.candidate_configs(sum(placement)):
            g = self.goodput(placement, cfg)
            if g > best[1]:
                best = (cfg, g)
        return best


@functools.cache
def profile(name: str) -> Profile:
    """The (cached) profile of application ``name``."""
    if name not in MAX_EPOCHS:
        raise ValueError(f"unknown Pollux application {name!r}; choose one of {list(MAX_EPOCHS)}")
    return Profile(name)


def parse_model(model: str) -> tuple[str, int | None]:
    """``"cifar10"`` → (cifar10, None: Pollux-tuned batch); ``"cifar10@2048"`` → fixed 2048."""
    app, sep, bsz = model.partition("@")
    return app, (int(bsz) if sep else POLLUX_FIXED_BSZ.get(app))


def placement_of(alloc: Allocation) -> tuple[int, ...]:
    """GPUs per node of an allocation, in server order."""
    return tuple(n for _, n in alloc.workers)


class PolluxGoodput:
    """True (noise-free) goodput of Pollux jobs; work unit: progress (initial-batch steps)."""

    name = "pollux-goodput"

    def __init__(self) -> None:
        self._cache: dict[tuple[str, tuple[int, ...]], float] = {}

    def speed_at(self, model: str, placement: tuple[int, ...]) -> float:
        """Progress units per second of a ``model`` job on ``placement`` (GPUs per node)."""
        key = (model, placement)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        app, fixed = parse_model(model)
        prof = profile(app)
        replicas = sum(placement)
        if replicas == 0:
            value = 0.0
        elif fixed is None:
            value = prof.best_config(normalise_placement(placement))[1]
        else:
            value = prof.goodput(placement, prof.fixed_batch_config(fixed, replicas))
        self._cache[key] = value
        return value

    def speed(self, spec: JobSpec, alloc: Allocation) -> float:
        return self.speed_at(spec.model, placement_of(alloc))

    def ideal_speed(self, spec: JobSpec) -> float:
        return self.speed_at(spec.model, packed_placement(spec.num_workers))

    def best_speed(self, spec: JobSpec) -> float:
        best = 0.0
        for replicas in range(max(spec.min_workers, 1), spec.max_workers + 1):
            best = max(best, self.speed_at(spec.model, packed_placement(replicas)))
        return best
