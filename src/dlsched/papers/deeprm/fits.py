"""Which checkpoint a ``deeprm`` name runs and which jobs its image can show, without PyTorch.

Split from `dlsched.papers.deeprm.policy` so that ``simulate -s deeprm`` on a workload whose jobs
DeepRM's image cannot show is refused before PyTorch is imported and the policy loads
(`refusal`, asked by the scheduler registry; issue 36): the image's size is in the checkpoint's
``card.json``, the only file read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from dlsched.core import JobSpec, Resources
from dlsched.papers.deeprm.shape import DeepRMShape
from dlsched.workloads.deeprm import STEP_S

POLICY_DIR = Path(__file__).resolve().parent / "policies"
"""Shipped DeepRM policies: ``ranked`` (the default) and the paper-state ``load*`` ones."""
DEFAULT_POLICY = POLICY_DIR / "ranked"
"""``deeprm``'s policy: the ranked view (`DeepRMShape.ranked`), trained over loads 0.3–1.9 on
50-step and 200-job jobsets (its ``card.json`` says how)."""
PAPER_POLICY = POLICY_DIR / "paper"
"""``deeprm:paper``'s policy: DeepRM's own method (``train deeprm --paper``: REINFORCE from a
random network on the paper's state, no imitation; its ``card.json`` says on what budget)."""
PAPER_LOAD_DIR = POLICY_DIR / "paper_loads"
"""``deeprm:paper@LOAD``'s policies, one folder a load: `PAPER_POLICY` trained on by the same
method at that load only (the authors' code trains one network per arrival rate). The folder has
no card itself, so `shipped_policies` (and ``deeprm:LOAD``) never pick one."""


def shipped_policies() -> list[Path]:
    """Checkpoint folders of the shipped policies."""
    if not POLICY_DIR.is_dir():
        return []
    return sorted(p for p in POLICY_DIR.iterdir() if (p / "card.json").is_file())


def _card(path: Path) -> dict:
    """The ``card.json`` of checkpoint ``path`` (its folder or a file in it) as read (it is
    checked when the policy loads)."""
    folder = path.parent if path.is_file() else path
    data = json.loads((folder / "card.json").read_text(encoding="utf-8"))
    return data if isinstance(data, dict) else {}


def policy_path(arg: str | None) -> Path:
    """The checkpoint folder ``deeprm`` (`DEFAULT_POLICY`), ``deeprm:paper`` (`PAPER_POLICY`),
    ``deeprm:paper@LOAD`` (`paper_load_policy`), ``deeprm:LOAD`` (the paper-state policy whose
    card's training load is nearest ``LOAD``) or ``deeprm:PATH`` runs.

    Raises:
        ValueError: one line, when no such policy is there.
    """
    if arg == "paper":
        if not (PAPER_POLICY / "card.json").is_file():
            raise ValueError(f"deeprm:paper: no policy in {PAPER_POLICY}")
        return PAPER_POLICY
    if arg is not None and arg.startswith("paper@"):
        return paper_load_policy(arg)
    if arg is not None and Path(arg).expanduser().exists():
        return Path(arg).expanduser()
    if arg is None:
        if not (DEFAULT_POLICY / "card.json").is_file():
            raise ValueError(f"deeprm: no shipped policy in {DEFAULT_POLICY}; use deeprm:PATH")
        return DEFAULT_POLICY
    try:
        want = float(arg)
    except ValueError:
        raise ValueError(f"deeprm:{arg}: neither a checkpoint path nor a load") from None
    paper = [p for p in shipped_policies() if p not in (DEFAULT_POLICY, PAPER_POLICY)]
    if not paper:
        raise ValueError(f"deeprm: no paper-state policy in {POLICY_DIR}; use deeprm:PATH")
    return min(paper, key=lambda p: abs(float(_card(p)["workload_params"]["load"]) - want))


def paper_load_policies() -> dict[float, Path]:
    """`PAPER_LOAD_DIR`'s policy folders by the one load each was trained at."""
    if not PAPER_LOAD_DIR.is_dir():
        return {}
    found = {}
    for folder in sorted(PAPER_LOAD_DIR.iterdir()):
        if (folder / "card.json").is_file():
            found[float(_card(folder)["workload_params"]["load"])] = folder
    return found


def paper_load_policy(arg: str) -> Path:
    """The folder ``deeprm:paper@LOAD`` runs: the `PAPER_LOAD_DIR` policy trained at ``LOAD``
    exactly (no nearest load: each is `PAPER_POLICY` trained on at that load only).

    Raises:
        ValueError: one line naming the loads there are, when none was trained at ``LOAD``.
    """
    text = arg.removeprefix("paper@")
    found = paper_load_policies()
    there = ", ".join(f"paper@{load:g}" for load in sorted(found)) or "none"
    try:
        load = float(text)
    except ValueError:
        raise ValueError(f"deeprm:{arg}: {text!r} is not a load (shipped: {there})") from None
    if load not in found:
        raise ValueError(f"deeprm:{arg}: no policy trained at load {load:g} (shipped: {there})")
    return found[load]


def spec_profile(spec: JobSpec) -> tuple[int, npt.NDArray[np.int64]]:
    """A job's duration in whole DeepRM steps and its (CPU, memory) demand in slots."""
    length = max(1, math.ceil(spec.total_work / STEP_S - 1e-9))
    need = spec.demand(spec.num_workers, 0)
    return length, np.array([round(need.cpu), round(need.mem)], np.int64)


def image_cannot_show(shape: DeepRMShape, jobs: Sequence[JobSpec]) -> str | None:
    """Why DeepRM's image of ``shape`` cannot show some job as it is: longer than its
    ``horizon`` steps or needing more than its ``res_slots`` units of a resource (the
    ``deeprm`` workload's jobs always fit); None when every job fits."""
    for spec in jobs:
        length, demand = spec_profile(spec)
        if length > shape.horizon or demand.max() > shape.res_slots:
            return (
                f"job {spec.job_id} runs {length:,} steps and needs {demand[0]} CPU and "
                f"{demand[1]} memory units; DeepRM's image shows {shape.horizon} steps "
                f"ahead and {shape.res_slots} units of each resource, the deeprm "
                "workload's scale"
            )
    return None


def refusal(arg: str | None, jobs: Sequence[JobSpec], servers: Sequence[Resources]) -> str | None:
    """The built ``deeprm:arg``'s `cannot_run`, from its card alone; None also when the policy
    or its card cannot be read (building it then says why)."""
    try:
        shapes = _card(policy_path(arg)).get("shapes", {})
        shape = DeepRMShape.from_shapes(shapes if isinstance(shapes, dict) else {})
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return image_cannot_show(shape, jobs)
