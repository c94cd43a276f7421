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


def test_python_m_dlsched_runs_the_cli() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "dlsched", "list"], capture_output=True, text=True, check=True
    )
    assert "efficient-srtf" in result.stdout


def test_package_is_typed() -> None:
    from importlib.resources import files

    assert files("dlsched").joinpath("py.typed").is_file()
