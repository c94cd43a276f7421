"""The public names of ``import dlsched``: importable, documented, typed for downstream code."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import dlsched

ROOT = Path(__file__).resolve().parents[1]
PUBLIC = ("simulate", "compare", "make_scheduler", "make_workload", "BaseScheduler", "Result")


@pytest.mark.parametrize("name", PUBLIC)
def test_public_name_is_exported_and_documented(name: str) -> None:
    assert name in dlsched.__all__
    assert (getattr(dlsched, name).__doc__ or "").strip()


def test_import_dlsched_does_not_import_torch_and_registers_the_envs() -> None:
    probe = (
        "import sys, gymnasium, dlsched\n"
        "print('torch' in sys.modules, sorted(i for i in gymnasium.registry if 'dlsched' in i))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == (
        "False ['dlsched/DL2-v0', 'dlsched/DL2Slot-v0', 'dlsched/DeepRM-v0', 'dlsched/SCED2-v0']"
    )


def test_py_typed_ships_with_the_package() -> None:
    assert (Path(dlsched.__file__).parent / "py.typed").is_file()
    package_data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]")[1]
    assert '"py.typed",' in package_data.split("\n[")[0]


DOWNSTREAM = """
    import dlsched
    from dlsched.core import ClusterView, Decision


    class SmallestFirst(dlsched.BaseScheduler):
        name = "smallest-first"

        def decide(self, view: ClusterView) -> Decision:
            decision = Decision()
            for run in sorted(view.pending, key=lambda r: r.spec.num_workers):
                decision.set(run.job_id, run.spec.num_workers, run.spec.num_ps)
            return decision


    result = dlsched.simulate("dl2", SmallestFirst(), seed=1, num_jobs=5)
    reveal_type(result)
    rows = dlsched.compare("dl2", ["drf", SmallestFirst()], seeds=[1], num_jobs=5)
    reveal_type(rows[0].mean)
"""


@pytest.mark.slow
def test_mypy_strict_accepts_a_downstream_scheduler(tmp_path: Path) -> None:
    """What a user's ``mypy --strict`` sees: no error in their file, and real types (not Any)
    for what the API returns. dlsched is found on the interpreter's path, as an installed
    package, so mypy reads it only because ``py.typed`` is there."""
    mypy = pytest.importorskip("mypy.api")
    path = tmp_path / "downstream.py"
    path.write_text(textwrap.dedent(DOWNSTREAM))
    stdout, stderr, status = mypy.run(
        [
            "--strict",
            "--follow-imports=silent",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--python-version",
            "3.11",
            str(path),
        ]
    )
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert errors == [], stdout + stderr
    assert 'Revealed type is "dlsched.sim.result.Result"' in stdout
    assert 'Revealed type is "dict[str, float]"' in stdout
    assert status == 0
