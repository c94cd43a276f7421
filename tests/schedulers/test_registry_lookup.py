"""A lookup by name imports the policy module named after it first, every module otherwise."""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest


def _modules_after(code: str) -> list[str]:
    probe = (
        f"import sys\nfrom dlsched.schedulers.registry import made_for, make_scheduler\n{code}\n"
        "print(sorted(m for m in sys.modules if m.startswith(('dlsched.schedulers.',"
        " 'dlsched.papers.')) and m.rsplit('.', 1)[-1] not in ('base', 'arguments')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    return list(ast.literal_eval(result.stdout.strip().splitlines()[-1]))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("fifo", "dlsched.schedulers.fifo"),
        ("tetris-star", "dlsched.schedulers.tetris_star"),
        ("optimus-oracle", "dlsched.schedulers.optimus"),
        ("deeprm", "dlsched.papers.deeprm.scheduler"),
    ],
)
def test_a_name_imports_its_own_module(name: str, module: str) -> None:
    loaded = _modules_after(f"make_scheduler({name!r}); made_for({name!r})")
    assert module in loaded
    assert "dlsched.schedulers.kubeflow_static" not in loaded  # not every policy module
    assert "dlsched.papers.sched2.scheduler" not in loaded


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["offline-rl", "optimus-oracle-allreduce", "efficient-srtf-oracle"]
)
def test_a_name_registered_elsewhere_is_still_found(name: str) -> None:
    from dlsched.schedulers.registry import make_scheduler

    assert make_scheduler(name) is not None
    loaded = _modules_after(f"make_scheduler({name!r})")
    assert "dlsched.schedulers.kubeflow_static" in loaded  # every policy module


def test_an_unknown_name_lists_every_scheduler() -> None:
    from dlsched.schedulers.registry import make_scheduler, schedulers

    with pytest.raises(ValueError, match="unknown scheduler 'nope'") as info:
        make_scheduler("nope")
    for name in schedulers():
        assert name in str(info.value)
