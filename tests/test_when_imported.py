"""`dlsched.when_imported`: a hook runs once, right after the module's import, or at once."""

from __future__ import annotations

import subprocess
import sys


def test_a_hook_runs_after_a_later_import_and_at_once_for_an_imported_module() -> None:
    probe = (
        "import sys\nfrom dlsched.when_imported import when_imported\n"
        "seen = []\n"
        "when_imported('colorsys', lambda m: seen.append(('colorsys', hasattr(m, 'rgb_to_hsv'))))\n"
        "print(seen)\n"
        "import colorsys\nimport colorsys\nprint(seen, type(colorsys.__loader__).__name__)\n"
        "when_imported('sys', lambda m: seen.append(('sys', m is sys)))\nprint(seen)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == [
        "[]",
        "[('colorsys', True)] SourceFileLoader",
        "[('colorsys', True), ('sys', True)]",
    ]


def test_a_spec_looked_up_first_keeps_the_hook() -> None:
    """``importlib.util.find_spec`` (is it installed?) before the import loses no hook."""
    probe = (
        "import importlib.util\nfrom dlsched.when_imported import when_imported\n"
        "seen = []\nwhen_imported('colorsys', lambda m: seen.append(m.__name__))\n"
        "assert importlib.util.find_spec('colorsys') is not None\nprint(seen)\n"
        "import colorsys\nprint(seen)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.splitlines() == ["[]", "['colorsys']"]


def test_the_registration_module_imported_first_registers_the_ids() -> None:
    """``import dlsched.rl.registration`` before Gymnasium: its own ``import gymnasium`` fires
    the package's hook while the module is half made; the ids are still registered once."""
    probe = (
        "import dlsched.rl.registration\nimport gymnasium as gym\n"
        "print(sorted(i for i in gym.registry if i.startswith('dlsched/')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert "dlsched/DL2-v0" in result.stdout and "dlsched/SCED2-v0" in result.stdout
