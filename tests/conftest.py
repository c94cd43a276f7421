"""Test tiers: tests under `INTEGRATION` folders start real processes or servers (the live
runtime, the fake Kubernetes API server) and are marked ``integration``; ``make test-fast`` runs
the unit tier, ``-m "not slow and not integration"``, and ``make test`` runs everything."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
INTEGRATION = (TESTS / "live", TESTS / "k8s")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(folder in item.path.parents for folder in INTEGRATION):
            item.add_marker(pytest.mark.integration)


@pytest.fixture(autouse=True)
def _root_logging_restored() -> Iterator[None]:
    """A command that sets up logging (``k8s run --log-level``) attaches a handler to the
    stderr of the Typer runner it ran under, closed once that run ends: later tests' records
    would hit the closed stream. Each test gets the root logger back as it found it, and the
    package logger's level (a test quieting ``dlsched`` hid later tests' warnings from caplog)."""
    root, package = logging.getLogger(), logging.getLogger("dlsched")
    handlers, level, package_level = list(root.handlers), root.level, package.level
    yield
    package.setLevel(package_level)
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)
