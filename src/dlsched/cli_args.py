"""Bounded parsers for what users type on the command line: seeds, seed lists and ``-o KEY=VALUE``
workload options.

Every parser raises a one-line `ValueError` that names the option and the offending text, before
anything is generated or allocated. The limits are generous (far above any paper's setting) and
exist so that a typo cannot ask for terabytes or a run that never ends:

* seeds: integers in ``[0, MAX_SEED]`` (NumPy's seed range);
* one ``compare``: at most `MAX_SEEDS` seeds;
* servers: ``[1, MAX_SERVERS]``; load: ``(0, MAX_LOAD]``; noise: ``[0, 1]``; all finite;
* generator options: `OPTION_BOUNDS` (``num_jobs`` at most `MAX_JOBS`, fractions in
  ``[0, 1]``, …).

No Typer or Rich here: the library (``experiments.compare.parse_seeds``) uses these parsers too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

MAX_SEED = 2**32 - 1
"""Largest seed (NumPy seeds are 32-bit)."""
MAX_SEEDS = 10_000
"""Most seeds in one ``--seeds`` list (each is a full run per scheduler)."""
MAX_SERVERS = 100_000
"""Largest cluster, servers."""
MAX_LOAD = 100.0
"""Largest arrival-rate multiplier."""
MAX_JOBS = 1_000_000
"""Most jobs a generator may be asked for (``-o num_jobs``, ``-o max_jobs``)."""
MAX_HORIZON_S = 1e15
"""Latest simulated stop time, seconds (``--horizon``, ``-o horizon_s``)."""
MAX_NOISE = 1.0
"""Largest relative standard deviation of speed noise."""
MAX_LAYER = 4096
"""Widest hidden layer a ``train --hidden`` may ask for (units)."""
MAX_LAYERS = 8
"""Most hidden layers a ``train --hidden`` may ask for."""
MAX_STEPS = 100_000_000
"""Most iterations, updates, episodes or steps a ``train`` option may ask for."""
MAX_WORKERS = 256
"""Most local worker processes a ``compare --workers`` may ask for."""

# Keys the CLI sets through its own flags: ``-o`` must not set them a second time.
_FLAG_KEYS = {
    "servers": "--servers",
    "load": "--load",
    "noise": "--noise",
    "placement": "--placement",
    "horizon": "--horizon",
    "seed": "--seed",
    "on_bad_row": "--on-bad-row",
}
# Keywords of `dlsched.simulate` that are not generator options and take no text.
_NOT_OPTIONS = ("on_job_finished", "rescale", "workload", "scheduler")


@dataclass(frozen=True)
class Bound:
    """What one ``-o KEY=VALUE`` accepts.

    Attributes:
        kind: ``"int"``, ``"float"``, ``"bool"`` or ``"str"``.
        low: smallest number accepted (ints and floats).
        high: largest number accepted.
        low_open: whether ``low`` itself is refused.
    """

    kind: str
    low: float = -math.inf
    high: float = math.inf
    low_open: bool = False

    def describe(self) -> str:
        """``"an integer in [1, 1000000]"`` and the like."""
        if self.kind == "bool":
            return "true or false"
        if self.kind == "str":
            return "text"
        noun = "an integer" if self.kind == "int" else "a finite number"
        left = "(" if self.low_open else "["
        low = _number(self.low)
        return f"{noun} in {left}{low}, {_number(self.high)}]"


def _number(x: float) -> str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{int(x)}" if float(x).is_integer() else f"{x:g}"


OPTION_BOUNDS: dict[str, Bound] = {
    # workload generators (dl2, deeprm, sched2, kubeflow) and traces (philly, trace)
    "num_jobs": Bound("int", 1, MAX_JOBS),
    "max_jobs": Bound("int", 1, MAX_JOBS),
    "horizon_steps": Bound("int", 1, MAX_JOBS),
    "gpus_per_server": Bound("int", 1, 1024),
    "one_gpu_frac": Bound("float", 0.0, 1.0),
    "serial_fraction": Bound("float", 0.0, 1.0),
    "interval_scale": Bound("float", 0.0, 1e6, low_open=True),
    "arrival_cv": Bound("float", 0.0, 100.0),
    "mix": Bound("str"),
    "start": Bound("str"),
    "end": Bound("str"),
    "columns": Bound("str"),
    "time_unit": Bound("str"),
    "duration_unit": Bound("str"),
    "drop_status": Bound("str"),
    "split": Bound("str"),
    "part": Bound("str"),
    "number": Bound("int", 1, 8),  # pollux: which of its 8 workloads
    "jobs": Bound("str"),  # pollux: adaptive, tuned or tuned-batch
    "cluster": Bound("str"),  # every workload: a heterogeneous cluster, v100:4x8,k80:4x8
    "speed_spread": Bound("float", 0.0, 10.0),  # heterogeneous: true rates around the profile
    "demands": Bound("str"),  # deeprm: text (the paper's job sizes) or code (the authors' code's)
    "job_types": Bound("str"),  # heterogeneous: drawn, model or a CSV of job_id,job_type
    "jobs_per_hour": Bound("float", 0.0, 1e6, low_open=True),  # gavel: arrival rate
    "multi_gpu": Bound("bool"),  # gavel: jobs of 1-8 GPUs
    "round_s": Bound("float", 0.0, 1e6, low_open=True),  # gavel: round length
    # simulator keywords reachable through -o
    "interval_s": Bound("float", 0.0, 1e9, low_open=True),
    "horizon_s": Bound("float", 0.0, MAX_HORIZON_S),
    "on_events": Bound("bool"),
    "restart_s": Bound("float", 0.0, 1e6),  # seconds of a checkpoint-restart (Pollux: 30)
    "cross_server_slowdown": Bound("bool"),  # false: the locality model's slowdown off
    "repack": Bound("bool"),  # true: jobs split over servers move onto one when room frees
    "core": Bound("str"),  # auto, compiled or python: which core replays LAS runs (simulate)
}
"""Type and range of every ``-o`` key; a key not listed is passed on as text or number (finite)
and the workload refuses it if it has no such option."""

_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


VARY_BOUNDS: dict[str, Bound] = {
    **OPTION_BOUNDS,
    "servers": Bound("int", 1, MAX_SERVERS),
    "load": Bound("float", 0.0, MAX_LOAD, low_open=True),
}
"""Bounds of ``train dl2 --vary`` values: the ``-o`` keys plus the settings that have flags."""


def parse_option_value(
    key: str, raw: str, option: str = "--option", bounds: dict[str, Bound] = OPTION_BOUNDS
) -> Any:
    """``raw`` as the type ``bounds`` (default `OPTION_BOUNDS`) gives ``key``, within its range.

    Raises:
        ValueError: naming ``option``, the key and what it accepts.
    """
    bound = bounds.get(key)
    where = f"{option} {key}={raw}"
    if bound is None:
        return _untyped(raw, where)
    if bound.kind == "str":
        return raw
    if bound.kind == "bool":
        if raw.strip().lower() in _TRUE:
            return True
        if raw.strip().lower() in _FALSE:
            return False
        raise ValueError(f"{where}: expected true or false")
    try:
        number = float(raw)
    except ValueError:
        raise ValueError(f"{where}: expected {bound.describe()}") from None
    if not math.isfinite(number):
        raise ValueError(f"{where}: expected {bound.describe()}")
    too_low = number <= bound.low if bound.low_open else number < bound.low
    if too_low or number > bound.high:
        raise ValueError(f"{where}: expected {bound.describe()}")
    if bound.kind == "int":
        if not number.is_integer():
            raise ValueError(f"{where}: expected {bound.describe()}")
        return int(number)
    return number


def _untyped(raw: str, where: str) -> Any:
    """An int if ``raw`` is one, else a finite float, else the text (as before types were known)."""
    try:
        return int(raw)
    except ValueError:
        pass
    try:
        number = float(raw)
    except ValueError:
        return raw
    if not math.isfinite(number):
        raise ValueError(f"{where}: expected a finite number")
    return number


_PYTHON_ONLY = frozenset({"progress"})
"""Loader keywords that take a Python object (a progress callback), not text."""

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")


def parse_options(items: Iterable[str] | None, option: str = "--option") -> dict[str, Any]:
    """``["num_jobs=50", "mix=large-jobs"]`` → ``{"num_jobs": 50, "mix": "large-jobs"}``.

    Keys may use ``-`` for ``_``. A key the CLI has its own flag for (``noise``: ``--noise``) is
    refused, as is a key given twice.

    Raises:
        ValueError: one line naming ``option`` and the item.
    """
    parsed: dict[str, Any] = {}
    for item in items or []:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise ValueError(f"{option} {item!r}: expected KEY=VALUE")
        if not _KEY.match(key):
            raise ValueError(f"{option} {item!r}: {key!r} is not an option name")
        name = key.replace("-", "_")
        if name in _FLAG_KEYS:
            raise ValueError(f"{option} {item!r}: set {name} with {_FLAG_KEYS[name]}")
        if name in _PYTHON_ONLY:
            raise ValueError(f"{option} {item!r}: {name} is set from Python, not the CLI")
        if name in _NOT_OPTIONS:
            raise ValueError(f"{option} {item!r}: {name!r} is not a workload option")
        if name in parsed:
            raise ValueError(f"{option} {item!r}: {name} given twice")
        parsed[name] = parse_option_value(name, raw, option)
    return parsed


def parse_hidden(text: str, option: str = "--hidden") -> tuple[int, ...]:
    """``"64,64"`` → ``(64, 64)``: 1 to `MAX_LAYERS` layers of 1 to `MAX_LAYER` units.

    Raises:
        ValueError: naming ``option`` and the text.
    """
    parts = [p.strip() for p in text.split(",") if p.strip()]
    where = f"{option} {text!r}"
    if not parts:
        raise ValueError(f"{where}: expected layer sizes like 64,64")
    if len(parts) > MAX_LAYERS:
        raise ValueError(f"{where}: at most {MAX_LAYERS} layers")
    sizes = []
    for part in parts:
        if not part.isdigit() or not 1 <= int(part) <= MAX_LAYER:
            raise ValueError(f"{where}: each size an integer in [1, {MAX_LAYER}], got {part!r}")
        sizes.append(int(part))
    return tuple(sizes)


def parse_seed(text: str, option: str = "--seed") -> int:
    """One seed in ``[0, MAX_SEED]``.

    Raises:
        ValueError: naming ``option`` if ``text`` is not such an integer.
    """
    try:
        seed = int(text.strip())
    except ValueError:
        raise ValueError(f"{option}: {text!r} is not a seed (an integer >= 0)") from None
    if seed < 0:
        raise ValueError(f"{option}: {seed} is negative; seeds are integers >= 0")
    if seed > MAX_SEED:
        raise ValueError(f"{option}: {text.strip()} is above the largest seed {MAX_SEED}")
    return seed


def parse_seed_list(text: str, option: str = "--seeds", max_count: int = MAX_SEEDS) -> list[int]:
    """``"1-10"``, ``"1,3,5"``, ``"7"`` or a mix (``"1-3,8"``) → list of seeds, in order.

    Ranges are counted before they are expanded, so ``0-99999999999999999999`` is refused at
    once instead of filling memory.

    Raises:
        ValueError: naming ``option`` and the part that is not a seed or range, a seed outside
            ``[0, MAX_SEED]``, more than ``max_count`` seeds, or a seed given twice (it would
            count twice in the means and intervals).
    """
    ranges: list[tuple[int, int]] = []
    count = 0
    for part in text.split(","):
        part = part.strip()
        if "-" in part[1:] and not part.startswith("-"):
            lo, hi = part.split("-", 1)
            first, last = _seed_in(lo, part, option), _seed_in(hi, part, option)
            if last < first:
                raise ValueError(f"{option}: {part!r} is not a seed or a range like 1-10")
        else:
            first = last = _seed_in(part, part, option)
        count += last - first + 1
        if count > max_count:
            raise ValueError(f"{option}: {text!r} has more than {max_count:,} seeds")
        ranges.append((first, last))
    seeds = [seed for first, last in ranges for seed in range(first, last + 1)]
    repeated = [seed for seed, n in Counter(seeds).items() if n > 1]
    if repeated:
        raise ValueError(f"{option}: seed {repeated[0]} given twice; each run would count twice")
    return seeds


def _seed_in(text: str, part: str, option: str) -> int:
    try:
        seed = int(text)
    except ValueError:
        raise ValueError(f"{option}: {part!r} is not a seed or a range like 1-10") from None
    if seed < 0:
        raise ValueError(f"{option}: {seed} is negative; seeds are integers >= 0")
    if seed > MAX_SEED:
        raise ValueError(f"{option}: {part!r} goes above the largest seed {MAX_SEED}")
    return seed
