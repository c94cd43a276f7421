"""Kubernetes tests: a fake API server on 127.0.0.1 per test, and a client talking to it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client

from tests.k8s.apiserver import FakeApiServer


@pytest.fixture
def server() -> Iterator[FakeApiServer]:
    """A fake API server, started for the test and stopped after it."""
    with FakeApiServer() as fake:
        yield fake


@pytest.fixture
def api_client(server: FakeApiServer) -> Iterator[client.ApiClient]:
    """The official client, configured for ``server`` (plain HTTP, no credentials)."""
    config = client.Configuration(host=server.url)
    with client.ApiClient(config) as api:
        yield api
