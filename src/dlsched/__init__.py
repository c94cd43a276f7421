"""dlsched: scheduling deep-learning training jobs on shared GPU clusters with learned policies.

Quick start::

    import dlsched
    result = dlsched.simulate(workload="dl2", scheduler="drf", seed=1)
    print(result.summary()["avg_jct_s"])
    for row in dlsched.compare("dl2", ["drf", "optimus"], seeds=range(1, 4)):
        print(row.scheduler, row.mean["avg_jct_s"], "±", row.ci95["avg_jct_s"])

Public names: `simulate`, `compare`, `make_scheduler`, `make_workload`, `BaseScheduler` (subclass
it to write a scheduler) and `Result`. Importing the package registers the Gymnasium ids
``dlsched/DL2-v0``, ``dlsched/DeepRM-v0`` and ``dlsched/SCED2-v0`` (`dlsched.rl.registration`)
as soon as Gymnasium is imported (at once if it already is; `dlsched.when_imported`), so that a
run that does not use Gymnasium does not import it; it does not import PyTorch.
"""

import importlib
from types import ModuleType

from dlsched.api import compare, make_scheduler, make_workload, simulate
from dlsched.schedulers.base import BaseScheduler
from dlsched.sim import Result
from dlsched.when_imported import when_imported


def _register_envs(_gymnasium: ModuleType) -> None:
    """Register dlsched's Gymnasium ids (called once Gymnasium is imported): the registration
    module registers them when its import ends, so this also works when that module's own
    ``import gymnasium`` is what called it (then the import returns the half-made module)."""
    importlib.import_module("dlsched.rl.registration")


when_imported("gymnasium", _register_envs)

__version__ = "0.1.0"
__all__ = [
    "BaseScheduler",
    "Result",
    "__version__",
    "compare",
    "make_scheduler",
    "make_workload",
    "simulate",
]
