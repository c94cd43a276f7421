"""CLI commands that live outside ``cli.py``: ``dlsched live run`` (`dlsched.commands.live`) and
the helpers every command shares (`dlsched.commands.common`).

Each paper's ``dlsched train NAME`` sub-command lives in its package
(``dlsched/papers/NAME/command.py``) and is found through `dlsched.plugins`. Command modules
define plain Typer command functions over the Python API and import only
`dlsched.commands.common`; `dlsched.cli` adds them to its apps, so no command imports the CLI.
"""
