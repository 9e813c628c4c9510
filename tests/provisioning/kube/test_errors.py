"""Error classification of what the kubernetes client and urllib3 raise."""
from __future__ import annotations

import json

import pytest
import urllib3
from kubernetes.client.exceptions import ApiException

from provisioning.appliers.base import PermanentApplyError, TransientApplyError
from provisioning.kube.errors import (
    PermanentKubeError,
    TransientKubeError,
    classify_api_exception,
    kube_call,
    retry_after_seconds,
)


def api_exception(status: int, message: str = "boom", headers: dict | None = None) -> ApiException:
    exc = ApiException(status=status, reason="Reason", body=json.dumps({"kind": "Status", "message": message}))
    exc.headers = headers
    return exc


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504])
def test_retryable_statuses_are_transient(status):
    error = classify_api_exception(api_exception(status))

    assert isinstance(error, TransientKubeError) and isinstance(error, TransientApplyError)
    assert error.status == status


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 415, 422])
def test_other_client_errors_are_permanent_with_the_servers_message(status):
    error = classify_api_exception(api_exception(status, "admission webhook denied the request"), "apply v1 Pod x")

    assert isinstance(error, PermanentKubeError) and isinstance(error, PermanentApplyError)
    assert error.message == "apply v1 Pod x: admission webhook denied the request"


def test_client_side_failure_is_permanent():
    error = classify_api_exception(ApiException(status=0, reason="SSLError\ncertificate verify failed"))

    assert isinstance(error, PermanentKubeError)
    assert "certificate verify failed" in error.message


def test_retry_after_comes_from_the_header():
    error = classify_api_exception(api_exception(429, headers={"Retry-After": "7"}))

    assert error.retry_after == 7


def test_retry_after_accepts_an_http_date():
    assert retry_after_seconds({"Retry-After": "Thu, 01 Jan 1970 00:00:00 GMT"}) == 0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds(None) is None


def test_non_status_body_is_used_as_the_message():
    error = classify_api_exception(ApiException(status=502, reason="Bad Gateway", body="<html>upstream</html>"))

    assert error.message == "<html>upstream</html>"


def test_transport_errors_are_transient():
    def timeout():
        raise urllib3.exceptions.ReadTimeoutError(None, "/api", "Read timed out.")

    with pytest.raises(TransientKubeError, match="ReadTimeoutError"):
        kube_call(timeout)
