"""dlsched: scheduling deep-learning training jobs on shared GPU clusters with learned policies.

Quick start::

    import dlsched
    result = dlsched.simulate(workload="dl2", scheduler="drf", seed=1)
    print(result.summary()["avg_jct_s"])
"""

from dlsched.api import simulate
from dlsched.sim import Result

__version__ = "0.1.0"
__all__ = ["Result", "__version__", "simulate"]
