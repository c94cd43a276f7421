"""Live-runtime tests: every test must leave no process behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from dlsched.live import launcher

torch.set_num_threads(1)  # the reference runs share 2 cores with the jobs' processes


@pytest.fixture(autouse=True)
def no_leftover_processes() -> Iterator[None]:
    """Fail a test that leaves any process it launched running."""
    yield
    left = launcher.alive()
    launcher.terminate_all()
    assert not left, f"processes left running: {[p.name for p in left]}"


@pytest.fixture(scope="session", autouse=True)
def stop_forkserver() -> Iterator[None]:
    """Stop multiprocessing's fork server at the end of the session."""
    yield
    launcher.stop_forkserver()
