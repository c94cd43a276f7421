"""Gavel's measured throughputs: steps per second of 26 job types on K80, P100 and V100 GPUs.

Read from ``data/gavel_simulation_throughputs.json.gz`` (Gavel's ``simulation_throughputs.json``,
MIT; see ``data/README.md``). Only isolated runs are read (the ``"null"`` entries: no job
co-located on the same GPU). A job type with a scale factor above 1 is its distributed run on
that many GPUs, and the throughput is the whole job's steps per second. Three entries are 0.0:
ResNet-50 with batch size 128 on 2, 4 and 8 K80s (it does not fit a K80's memory); such a job
cannot run on K80s.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

DATA_FILE = "gavel_simulation_throughputs.json.gz"
GPU_TYPES: tuple[str, ...] = ("k80", "p100", "v100")
"""The GPU types Gavel measured (consolidated runs: every GPU of a job on one server)."""

_KEY = re.compile(r"^\('([^']+)', (\d+)\)$")


@dataclass(frozen=True, slots=True)
class JobType:
    """One of Gavel's job types (its ``job_table.py``).

    Attributes:
        name: Gavel's model name (``"ResNet-50 (batch size 64)"``).
        distributed: whether Gavel runs it on more than one GPU.
    """

    name: str
    distributed: bool


def _family(name: str, sizes: tuple[int, ...], distributed: bool) -> list[JobType]:
    return [JobType(f"{name} (batch size {b})", distributed) for b in sizes]


JOB_TYPES: tuple[JobType, ...] = (
    *_family("ResNet-18", (16, 32, 64, 128, 256), True),
    *_family("ResNet-50", (16, 32, 64, 128), True),
    *_family("Transformer", (16, 32, 64, 128, 256), True),
    *_family("LM", (5, 10, 20, 40, 80), True),
    *_family("Recommendation", (512, 1024, 2048, 4096, 8192), False),
    JobType("A3C", False),
    JobType("CycleGAN", False),
)
"""Gavel's 26 job types, in its table's order (the order its generator draws from)."""


@cache
def throughputs() -> dict[str, dict[tuple[str, int], float]]:
    """GPU type -> (job type, scale factor) -> steps per second, isolated runs.

    Raises:
        ValueError: the packaged file has a key or a value that is not what this reads.
    """
    raw = resources.files("dlsched.data").joinpath(DATA_FILE).read_bytes()
    data = json.loads(gzip.decompress(raw))
    table: dict[str, dict[tuple[str, int], float]] = {}
    for gpu_type in GPU_TYPES:
        rows: dict[tuple[str, int], float] = {}
        for key, entry in data[gpu_type].items():
            match = _KEY.match(key)
            value = entry.get("null") if isinstance(entry, dict) else None
            if match is None or not isinstance(value, int | float) or value < 0:
                raise ValueError(f"{DATA_FILE}: {gpu_type} entry {key!r} is not understood")
            rows[(match.group(1), int(match.group(2)))] = float(value)
        table[gpu_type] = rows
    return table


def rates_of(job_type: str, scale_factor: int, gpu_types: tuple[str, ...]) -> dict[str, float]:
    """Steps per second of ``job_type`` on ``scale_factor`` GPUs of each of ``gpu_types``.

    Raises:
        ValueError: a type Gavel did not measure, or a job type/size it has no entry for.
    """
    table = throughputs()
    unknown = [t for t in gpu_types if t not in table]
    if unknown:
        raise ValueError(
            f"GPU type {unknown[0]!r} has no Gavel throughputs; known: {', '.join(GPU_TYPES)}"
        )
    key = (job_type, scale_factor)
    if key not in table[GPU_TYPES[0]]:
        raise ValueError(f"Gavel has no throughput for {job_type!r} on {scale_factor} GPUs")
    return {t: table[t][key] for t in gpu_types}
