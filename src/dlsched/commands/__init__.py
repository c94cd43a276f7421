"""CLI commands of the subsystems (``dlsched train ...``, ``dlsched live ...``).

Each module imports ``train_app`` or ``live_app`` and the helpers from `dlsched.cli`, defines
its commands as thin wrappers over the Python API, and is listed in ``cli._COMMAND_MODULES``.
"""
