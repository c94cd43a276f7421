"""dlsched: scheduling deep-learning training jobs on shared GPU clusters with learned policies."""

__version__ = "0.1.0"
