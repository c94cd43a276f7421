"""The CLI and the heuristic schedulers must start without importing PyTorch."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "code",
    [
        "import dlsched.cli",
        "from dlsched.schedulers.registry import make_scheduler\n"
        "make_scheduler('fifo'); make_scheduler('drf')",
    ],
)
def test_light_entry_points_do_not_import_torch(code: str) -> None:
    probe = f"{code}\nimport sys\nprint('torch' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False", result.stderr
