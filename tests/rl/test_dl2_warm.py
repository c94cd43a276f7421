"""``python -m dlsched.papers.dl2.warm`` (run by ``make install``) compiles every DL2 numba
kernel into the cache, so a user's first DL2 step does not wait for numba (issue 34)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

DL2 = Path(__file__).resolve().parents[2] / "src" / "dlsched" / "papers" / "dl2"


def _njit_functions() -> set[str]:
    found = set()
    for path in DL2.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and any(
                "njit" in ast.unparse(d) for d in node.decorator_list
            ):
                found.add(f"{path.stem}.{node.name}")
    return found


@pytest.mark.slow
def test_warm_compiles_every_dl2_kernel_into_the_cache(tmp_path: Path) -> None:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(DL2.parents[2])}
    done = subprocess.run(
        [sys.executable, "-m", "dlsched.papers.dl2.warm"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cached = {p.name.rsplit("-", 1)[0] for p in tmp_path.rglob("*.nbi")}
    kernels = _njit_functions()
    assert len(kernels) >= 30
    assert kernels <= cached, f"not compiled by the warm-up: {sorted(kernels - cached)}"
    assert "gavel_core.replay" in cached  # the Gavel round core (`dlsched.sim.gavel_core`)
