"""`dlsched.kernel_cache`: a cached numba kernel whose callee in another file changed is
compiled again, not loaded stale (numba alone checks only the kernel's own file)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dlsched import kernel_cache

SRC = Path(__file__).resolve().parent.parent / "src"

HELPER = """from numba import njit

SCALE = {scale}


@njit(cache=True)
def scale(x):
    return x * SCALE
"""

KERNEL = """{guard}from numba import njit

from kpkg.helper import scale


@njit(cache=True)
def run(x):
    return scale(x) + 1.0
"""

GUARD = "from dlsched.kernel_cache import refresh\n\nrefresh(__file__)\n"


def _run(root: Path, cache_dir: Path | None) -> float:
    """``kpkg.kernel.run(1.0)`` in a fresh process (numba loads its cache from disk), with the
    cache in ``cache_dir`` (``NUMBA_CACHE_DIR``) or else in the package's ``__pycache__``."""
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{SRC}", "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("NUMBA_CACHE_DIR", None)
    if cache_dir is not None:
        env["NUMBA_CACHE_DIR"] = str(cache_dir)
    env.pop("NUMBA_DISABLE_JIT", None)
    probe = "from kpkg.kernel import run; print(run(1.0))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True
    )
    return float(result.stdout.strip())


@pytest.mark.parametrize(("guarded", "user_dir"), [(True, False), (False, False), (True, True)])
def test_an_edited_callee_in_another_file_is_compiled_again(
    tmp_path: Path, guarded: bool, user_dir: bool
) -> None:
    """Unguarded, numba loads the stale kernel: that case shows the test can fail (and says
    when a numba that checks callees makes the guard unneeded)."""
    cache_dir = tmp_path / "numba-cache" if user_dir else None
    package = tmp_path / "kpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text(KERNEL.format(guard=GUARD if guarded else ""))
    (package / "helper.py").write_text(HELPER.format(scale="2.0"))
    assert _run(tmp_path, cache_dir) == 3.0
    cached = (cache_dir or package).rglob("kernel.run-*.nbi")
    assert next(cached, None) is not None
    (package / "helper.py").write_text(HELPER.format(scale="50.0"))
    assert _run(tmp_path, cache_dir) == (51.0 if guarded else 3.0)
    assert _run(tmp_path, cache_dir) == (51.0 if guarded else 3.0)  # recompiled, then cached


def test_an_unwritable_cache_directory_is_left_alone(tmp_path: Path) -> None:
    """A ``__pycache__`` that cannot be created or written (here a file in its place, since
    tests may run as root) raises nothing."""
    (tmp_path / "kernels.py").write_text("import numba\n")
    (tmp_path / "__pycache__").write_text("not a directory")
    kernel_cache.refresh(str(tmp_path / "kernels.py"))
    assert (tmp_path / "__pycache__").read_text() == "not a directory"


def test_unchanged_sources_keep_the_cache_and_other_modules_files(tmp_path: Path) -> None:
    """Only this Python's files of the directory's numba modules go, and only on a change."""
    (tmp_path / "kernels.py").write_text("import numba\n")
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
    ours, other = cache / f"kernels.run-5.{tag}.nbi", cache / f"elsewhere.run-5.{tag}.nbi"
    ours.write_text("")
    other.write_text("")
    kernel_cache.refresh(str(tmp_path / "kernels.py"))
    assert not ours.exists() and other.exists()  # no stamp yet: unknown sources
    ours.write_text("")
    kernel_cache._REFRESHED.clear()
    kernel_cache.refresh(str(tmp_path / "kernels.py"))
    assert ours.exists()
    (tmp_path / "kernels.py").write_text("import numba  # edited\n")
    kernel_cache._REFRESHED.clear()
    kernel_cache.refresh(str(tmp_path / "kernels.py"))
    assert not ours.exists()
