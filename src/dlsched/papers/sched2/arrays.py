"""Helpers of `dlsched.papers.sched2.batched_env`: the device choice, the workloads it can step
exactly, the NumPy/PyTorch spellings it needs and `Locality`'s slowdown on arrays."""

from __future__ import annotations

from typing import Any

import numpy as np

from dlsched.core import Arch
from dlsched.models.locality import Locality
from dlsched.workloads.base import Workload


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when PyTorch sees a GPU, else ``cpu``; ``cpu``/``cuda`` as given.

    Raises:
        ValueError: an unknown name, or ``cuda`` without a GPU.
    """
    if device not in ("auto", "cpu", "cuda"):
        raise ValueError(f"--device must be auto, cpu or cuda, got {device!r}")
    if device == "cpu":
        return "cpu"
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if device == "cuda":
        raise ValueError("--device cuda: PyTorch sees no CUDA GPU here (use auto or cpu)")
    return "cpu"


def check_workload(workload: Workload) -> tuple[int, int]:
    """(servers, GPUs per server) of a workload the batched environment can step exactly.

    Raises:
        ValueError: naming the first thing outside SCED²'s setting (servers of different GPU
            counts, CPU or memory that could bind before GPUs, a model other than `Locality`,
            placement other than packing, noise, periodic scheduling, elastic, PS or
            fractional-GPU jobs).
    """
    gpus = {s.gpu for s in workload.servers}
    if len(gpus) != 1:
        raise ValueError("batched sched2 env: servers must have equal GPU counts")
    m = int(next(iter(gpus)))
    if not isinstance(workload.model, Locality) or workload.model.gpus_per_server != m:
        raise ValueError("batched sched2 env: needs the Locality model of this cluster")
    if workload.placement != "pack" or workload.noise > 0 or workload.interval_s is not None:
        raise ValueError("batched sched2 env: needs pack placement, no noise, event scheduling")
    if not workload.on_events:
        raise ValueError("batched sched2 env: needs scheduling at every event")
    cpu = min(s.cpu for s in workload.servers)
    mem = min(s.mem for s in workload.servers)
    for spec in workload.jobs:
        d = spec.worker_demand
        if (
            d.gpu != 1.0
            or cpu < d.cpu * m
            or mem < d.mem * m
            or spec.elastic
            or spec.arch is not Arch.ALLREDUCE
            or spec.model not in workload.model.sensitivity
        ):
            raise ValueError(
                f"batched sched2 env: job {spec.job_id} is outside SCED²'s setting (one GPU per "
                "all-reduce worker, fixed size, CPU/memory never binding, a known model)"
            )
    return len(workload.servers), m


class ArrayOps:
    """The few array operations whose spelling differs between NumPy and PyTorch."""

    def __init__(self, backend: str, device: str) -> None:
        self.torch = backend == "torch"
        self.device = device
        self.f64: Any
        self.i64: Any
        self.b: Any
        if self.torch:
            import torch

            self.xp: Any = torch
            self.f64, self.i64, self.b = torch.float64, torch.int64, torch.bool
        else:
            self.xp = np
            self.f64, self.i64, self.b = np.float64, np.int64, np.bool_

    def array(self, value: Any, dtype: Any) -> Any:
        if self.torch:
            return self.xp.as_tensor(np.asarray(value), dtype=dtype, device=self.device)
        return np.asarray(value, dtype=dtype)

    def full(self, shape: tuple[int, ...], value: float, dtype: Any) -> Any:
        if self.torch:
            return self.xp.full(shape, value, dtype=dtype, device=self.device)
        return np.full(shape, value, dtype=dtype)

    def arange(self, n: int) -> Any:
        if self.torch:
            return self.xp.arange(n, device=self.device)
        return np.arange(n)

    def nonzero(self, mask: Any) -> tuple[Any, ...]:
        return mask.nonzero(as_tuple=True) if self.torch else np.nonzero(mask)

    def stable_argsort(self, x: Any) -> Any:
        if self.torch:
            return self.xp.argsort(x, dim=-1, stable=True)
        return np.argsort(x, axis=-1, kind="stable")

    def take(self, x: Any, idx: Any) -> Any:
        """``x`` gathered along the last axis."""
        if self.torch:
            return self.xp.take_along_dim(x, idx, dim=-1)
        if x.ndim == 2:  # plain fancy indexing: np.take_along_axis costs ~50 µs a call
            return x[np.arange(x.shape[0])[:, None], idx]
        return np.take_along_axis(x, idx, axis=-1)

    def numpy(self, x: Any) -> Any:
        return x.cpu().numpy() if self.torch else x


def slowdown(sensitivity: Any, servers: Any) -> Any:
    """`dlsched.models.locality.slowdown` on arrays, the same operations in the same order."""
    return 1.0 + 2.0 * (sensitivity - 1.0) * (servers - 1) / servers


def hold_blocked(free: Any, demand: Any, fits: Any, gpus_per_server: int, xp: Any) -> Any:
    """``(B,)`` whether some fitting window job would be placed at its best locality now: with
    ``(B, N)`` free GPUs, packing (SCED² Fig. 2: whole on the best-fitting server, else the
    emptiest servers first) spreads a ``d``-GPU job over the fewest servers whose free GPUs,
    largest first, sum to ``d``; best is ``ceil(d / M)`` servers. ``fits``: ``(B, J)`` legal
    picks, ``demand``: their ``(B, J)`` GPUs."""
    if xp is np:
        ranked = -np.sort(-free, axis=1)
        reach = ranked.cumsum(axis=1)
    else:
        reach = xp.sort(free, dim=1, descending=True).values.cumsum(dim=1)
    best = (demand + gpus_per_server - 1) // gpus_per_server
    column = (best - 1).clip(0, free.shape[1] - 1)
    if xp is np:
        room = reach[np.arange(len(free))[:, None], column]
    else:
        room = xp.take_along_dim(reach, column, dim=1)
    return (fits & (room >= demand)).any(axis=1)


def estimated_speed(spans: Any, speeds: Any, span: Any, xp: Any) -> Any:
    """`JobProfile.estimate_speed` on arrays: ``(B, k)`` profiled spans and speeds of B jobs
    interpolated linearly at their ``(B,)`` placements' spans (servers)."""
    out = xp.where(span <= spans[:, 0], speeds[:, 0], speeds[:, -1])
    for i in range(1, spans.shape[1]):
        lo, hi = spans[:, i - 1], spans[:, i]
        inside = (span > lo) & (span <= hi)
        w = (span - lo) / xp.where(hi > lo, hi - lo, 1)
        out = xp.where(inside, (1 - w) * speeds[:, i - 1] + w * speeds[:, i], out)
    return out
