"""DeepRM's training settings (`ReinforceConfig`, `DeepRMRunArgs`), without PyTorch: ``dlsched
train deeprm``'s options are generated from these documented fields
(`dlsched.commands.config_options`), so each option's help is the docstring here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

from dlsched.cli_args import MAX_LOAD, MAX_SEED, MAX_STEPS, parse_hidden
from dlsched.option_fields import Opt
from dlsched.papers.deeprm.shape import DeepRMShape, Jobset
from dlsched.papers.deeprm.state import Objective
from dlsched.workloads.deeprm import make_deeprm

TRAIN_SEED_BASE = 100_000
"""Training jobset ``i`` of a run seeded ``s``: ``deeprm`` seed ``TRAIN_SEED_BASE + 1000 s + i``."""
FRESH_SEED_BASE = 1_000_000
"""``--fresh-jobsets``: jobset ``i`` of iteration ``k`` (0-based) of a run seeded ``s`` is
``deeprm`` seed ``FRESH_SEED_BASE + 1_000_000 s + k · jobsets + i`` (above every validation and
test seed: 800000+, 900000+, 9001+)."""
MAX_HORIZON_STEPS = 100_000
"""Largest ``horizon_steps`` an option accepts."""


@dataclass
class ReinforceConfig:
    """Hyper-parameters (defaults: DeepRM §4.1 and its code's ``parameters.py``)."""

    load: Annotated[float, Opt(min=0.01, max=MAX_LOAD)] = 0.7
    """Offered load of the training jobsets (fraction of capacity)."""
    objective: Objective = "slowdown"
    """``"slowdown"`` (reward ``−Σ 1/T_j``) or ``"completion"`` (``−|J|``)."""
    jobsets: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 100
    """Training jobsets (paper: 100)."""
    episodes: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 20
    """Episodes per jobset per iteration, N (paper: 20)."""
    iterations: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 1000
    """Training iterations (paper: 1000)."""
    horizon_steps: Annotated[int, Opt(min=1, max=MAX_HORIZON_STEPS)] = 50
    """Time steps of arrivals per jobset (paper: 50)."""
    demands: Literal["text", "code"] = "text"
    """Job demands: §4.1's text (0.25r–0.5r, 0.05r–0.1r) or the authors' code's (twice those,
    half the jobs a step at a given load; the ``deeprm`` workload's ``demands``)."""
    loads: Annotated[tuple[float, ...], Opt(min=0.01, max=MAX_LOAD)] = ()
    """Several training loads, dealt round-robin over the jobsets (empty: ``load`` only)."""
    long_jobs: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 0
    """If > 0, every other training jobset holds this many jobs (a long jobset, the CLI's
    ``num_jobs`` setting) instead of ``horizon_steps`` steps of arrivals (0: the paper's only)."""
    lr: Annotated[float, Opt(min=0.0, max=10.0)] = 1e-3
    """RMSProp learning rate (paper: 0.001)."""
    rms_alpha: Annotated[float, Opt(min=0.0, max=1.0)] = 0.9
    """RMSProp smoothing ρ (code: 0.9)."""
    rms_eps: Annotated[float, Opt(min=0.0, max=1.0)] = 1e-9
    """RMSProp ε (code: 1e-9)."""
    gamma: Annotated[float, Opt(min=0.0, max=1.0)] = 1.0
    """Discount factor (γ = 1 makes the return −Σ slowdowns)."""
    hidden: Annotated[tuple[int, ...], Opt(parse=parse_hidden)] = (20,)
    """Hidden layer sizes (paper: one layer of 20)."""
    mask_invalid: Annotated[bool, Opt(flags=("--mask-invalid/--unmasked",))] = True
    """Sample among valid actions only (False: the paper's unmasked policy)."""
    max_steps: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 400
    """Truncate episodes after this many time steps."""
    workers: Annotated[int, Opt(min=1, max=64)] = 2
    """Rollout processes (1: in this process)."""
    seed: Annotated[int, Opt(min=0, max=MAX_SEED)] = 0
    """Seeds torch, the action sampling and the choice of training jobsets."""
    pretrain_epochs: Annotated[int, Opt(min=0, max=MAX_STEPS)] = 0
    """Supervised epochs on SJF decisions before RL (0: none)."""
    pretrain_lr: Annotated[float, Opt(min=0.0, max=10.0)] = 1e-3
    """Adam learning rate of the supervised pre-training."""
    teacher: Literal["sjf", "withhold"] = "sjf"
    """Pre-training teacher: ``"sjf"`` (the code's ``pg_su.py``) or ``"withhold"`` (SJF keeping
    room for short jobs when busy)."""
    pretrain_temperature: Annotated[float, Opt(min=0.01, max=1000.0)] = 1.0
    """After pre-training, divide the output layer by this (> 1: the arg-max is unchanged, the
    softmax flatter, so REINFORCE's sampled episodes explore beyond the teacher)."""
    shape: DeepRMShape = field(default_factory=DeepRMShape)
    """State sizes (T, M, backlog, slots per resource)."""

    def train_seeds(self) -> list[int]:
        """The ``deeprm`` workload seeds of the training jobsets."""
        return [TRAIN_SEED_BASE + 1000 * self.seed + i for i in range(self.jobsets)]

    def points(self) -> list[tuple[float, int | None]]:
        """The ``(load, horizon_steps)`` settings trained on, in round-robin order; a
        ``horizon_steps`` of None is a `long_jobs`-job jobset."""
        loads = self.loads or (self.load,)
        kinds: list[int | None] = (
            [self.horizon_steps, None] if self.long_jobs else [self.horizon_steps]
        )
        return [(load, kind) for kind in kinds for load in loads]

    def jobset_setting(self, i: int) -> tuple[int, float, int | None]:
        """``(seed, load, horizon_steps)`` of training jobset ``i`` (horizon None: long)."""
        load, kind = self.points()[i % len(self.points())]
        return self.train_seeds()[i], load, kind

    def training_jobsets(self, ids: Sequence[int], iteration: int | None = None) -> list[Jobset]:
        """The training jobsets ``ids`` (indices into `train_seeds`); with ``iteration``, that
        iteration's fresh ones instead (`FRESH_SEED_BASE`, same loads and kinds)."""
        out = []
        for i in ids:
            seed, load, kind = self.jobset_setting(i)
            if iteration is not None:
                seed = FRESH_SEED_BASE + 1_000_000 * self.seed + iteration * self.jobsets + i
            out += make_jobsets([seed], load, kind, self.long_jobs, self.demands)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready hyper-parameters."""
        data = asdict(self)
        data["hidden"] = list(self.hidden)
        data["loads"] = list(self.loads)
        return data


@dataclass
class DeepRMRunArgs:
    """What ``dlsched train deeprm`` adds to `ReinforceConfig`."""

    validate_every: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 10
    """Iterations per validation."""
    validation_jobsets: Annotated[int, Opt(min=1, max=MAX_STEPS)] = 20
    """Validation jobsets per training setting."""
    ranked: Annotated[bool, Opt(flags=("--ranked",))] = False
    """Slots show the M shortest waiting jobs (not the paper's)."""
    paper: Annotated[bool, Opt(flags=("--paper",))] = False
    """DeepRM's own method: paper state, every action offered, REINFORCE from a random network,
    loads 1.1-1.9 unless --loads (README: what still differs)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """--paper: where episodes and network run: cpu (NumPy environment), cuda (all on the GPU)
    or auto."""
    baseline: Literal["step", "decision"] = "step"
    """--paper: REINFORCE baseline per time step (the paper's text) or per decision index
    (the authors' code)."""
    init_from: str = ""
    """--paper: start from this policy folder's network (policy.pt + card.json, e.g.
    src/dlsched/papers/deeprm/policies/paper), counting its iterations on."""
    fresh_jobsets: Annotated[bool, Opt(flags=("--fresh-jobsets",))] = False
    """--paper: draw new training jobsets every iteration (not the paper's: it trains on the
    same 100 every iteration)."""


def make_jobsets(
    seeds: Sequence[int],
    load: float,
    horizon_steps: int | None = 50,
    num_jobs: int = 200,
    demands: str = "text",
) -> list[Jobset]:
    """``deeprm`` jobsets for ``seeds``: ``horizon_steps`` steps of arrivals at ``load``, or
    ``num_jobs`` jobs when ``horizon_steps`` is None; ``demands`` as `make_deeprm`'s."""
    return [
        Jobset.from_workload(
            make_deeprm(
                s, load=load, horizon_steps=horizon_steps, num_jobs=num_jobs, demands=demands
            )
        )
        for s in seeds
    ]


BUDGET_ROUNDS = 10
"""Rounds an iteration's rollouts are dealt in under a wall-time budget (`Reinforce.step`): the
budget cuts an iteration after a tenth of its jobsets at the finest."""


@dataclass
class IterationStats:
    """One row of the training CSV."""

    iteration: int
    wall_s: float
    """Seconds since training started (`train_deeprm`: wall time, validation included)."""
    iteration_s: float
    mean_reward: float
    max_reward: float
    mean_slowdown: float
    samples: int
    dropped: int
    truncated: int
    jobsets: int
    """Training jobsets rolled out: all of them, unless the wall-time budget cut the
    iteration part way (`Reinforce.step`); its gradient then comes from these alone."""
