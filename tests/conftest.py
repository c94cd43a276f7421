"""Test tiers: tests under `INTEGRATION` folders start real processes or servers (the live
runtime, the fake Kubernetes API server) and are marked ``integration``; ``make test-fast`` runs
the unit tier, ``-m "not slow and not integration"``, and ``make test`` runs everything."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
INTEGRATION = (TESTS / "live", TESTS / "k8s")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(folder in item.path.parents for folder in INTEGRATION):
            item.add_marker(pytest.mark.integration)
