"""dlsched: scheduling deep-learning training jobs on shared GPU clusters with learned policies.

Quick start::

    import dlsched
    result = dlsched.simulate(workload="dl2", scheduler="drf", seed=1)
    print(result.summary()["avg_jct_s"])

Importing the package registers the Gymnasium ids ``dlsched/DL2-v0``, ``dlsched/DeepRM-v0``
and ``dlsched/SCED2-v0`` (`dlsched.rl.registration`); it does not import PyTorch.
"""

from dlsched.api import simulate
from dlsched.rl.registration import register_envs
from dlsched.sim import Result

register_envs()

__version__ = "0.1.0"
__all__ = ["Result", "__version__", "simulate"]
