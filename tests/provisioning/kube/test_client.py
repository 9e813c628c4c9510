"""Connections: configuration built from plain values, default timeouts, discovery once per client."""
from __future__ import annotations

import dataclasses

import pytest

from provisioning.kube.client import ClusterConnection, KubeClient, api_client, format_label_selector
from provisioning.kube.errors import TransientKubeError

PEM = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_api_client_is_configured_from_the_connection_alone():
    connection = ClusterConnection(server="https://k8s.example:6443/", token="s3cret", ca_cert=PEM)

    configuration = api_client(connection).configuration

    assert configuration.host == "https://k8s.example:6443"
    assert configuration.retries is False  # our tasks retry, with backoff and a status row
    assert configuration.ca_cert_data == PEM
    assert configuration.verify_ssl is True
    assert configuration.auth_settings()["BearerToken"]["value"] == "Bearer s3cret"


def test_insecure_connection_skips_verification():
    configuration = api_client(ClusterConnection(server="https://k", insecure_skip_tls_verify=True)).configuration

    assert configuration.verify_ssl is False


def test_secrets_stay_out_of_repr():
    text = repr(ClusterConnection(server="https://k", token="s3cret", ca_cert=PEM))

    assert "s3cret" not in text and "BEGIN" not in text


def test_format_label_selector_is_stable():
    assert format_label_selector({"b": "2", "a": "1"}) == "a=1,b=2"


def test_discovery_happens_once_per_client(fake_kube, kube_client):
    kinds = [("batch/v1", "Job"), ("v1", "Namespace"), ("scheduling.volcano.sh/v1beta1", "PodGroup")]
    first = [kube_client.resource(*kind) for kind in kinds]
    discovery = len(fake_kube.requests)

    again = [kube_client.resource(*kind) for kind in kinds]

    assert again == first
    assert len(fake_kube.requests) == discovery


def test_discovery_calls_time_out_too(fake_kube, kube_connection):
    fake_kube.delay_next("GET", r"^/apis$", seconds=1.0)
    client = KubeClient(dataclasses.replace(kube_connection, request_timeout=0.3))

    with pytest.raises(TransientKubeError, match="^API discovery: ReadTimeoutError"):
        client.resource("batch/v1", "Job")
