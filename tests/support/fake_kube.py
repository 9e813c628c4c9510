"""Pytest fixtures for code that talks to Kubernetes: a running fake API server and connections to it.

Registered for the whole suite from tests/conftest.py. `fake_kube` is the server most tests need; choose its
version per test with `@pytest.mark.parametrize("fake_kube_version", ["v1.36.1"])`. A test or fixture that needs
another server (other CRDs installed, several clusters) asks `start_fake_kube(git_version=..., custom_resources=...)`
for it, so every server is stopped and checked for its own failures in one place.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

import pytest

from provisioning.kube.client import ClusterConnection, KubeClient
from kubesim.server import DEFAULT_GIT_VERSION, FakeKubeAPI

# The fake's HTTP access log would bury failure output; fake_kube.requests records the same requests.
logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


@contextmanager
def serving(**options) -> Iterator[FakeKubeAPI]:
    """A fake API server (FakeKubeAPI.start options) for the block; fails if the server itself failed while
    serving, which would otherwise show only as a puzzling answer to the code under test."""
    fake = FakeKubeAPI.start(**options)
    try:
        yield fake
        errors = fake.errors
    finally:
        fake.stop()
    assert not errors, f"the fake API server itself failed while serving: {errors!r}"


@pytest.fixture(autouse=True)
def outbound_loopback_allowed(settings) -> None:
    """Every fake server in the tests listens on 127.0.0.1, which the outbound policy denies by default (as it
    should in production). Tests of the policy itself set PORTAL_OUTBOUND_ALLOWED_NETWORKS back to []."""
    settings.PORTAL_OUTBOUND_ALLOWED_NETWORKS = ["127.0.0.0/8", "::1/128"]


@pytest.fixture
def start_fake_kube() -> Iterator[Callable[..., FakeKubeAPI]]:
    """`start_fake_kube(**FakeKubeAPI.start options)` -> a running fake API server, stopped when the test ends."""
    with ExitStack() as servers:
        yield lambda **options: servers.enter_context(serving(**options))


@pytest.fixture
def fake_kube_version() -> str:
    return DEFAULT_GIT_VERSION


@pytest.fixture
def fake_kube(start_fake_kube, fake_kube_version: str) -> FakeKubeAPI:
    """A fake API server on 127.0.0.1 serving the built-in kinds of that version and the GPU-stack CRDs."""
    return start_fake_kube(git_version=fake_kube_version)


@pytest.fixture
def kube_connection(fake_kube: FakeKubeAPI) -> ClusterConnection:
    # Tests of timeouts set their own short one; 10 s leaves room for a busy machine (2 s was seen to run out on a
    # loaded 2-core machine while the fake answered an ordinary apply).
    return ClusterConnection(server=fake_kube.url, token="test-token", ca_cert=fake_kube.ca_pem, request_timeout=10.0)


@pytest.fixture
def kube_client(kube_connection: ClusterConnection) -> Iterator[KubeClient]:
    with KubeClient(kube_connection) as client:
        yield client
