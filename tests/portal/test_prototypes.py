"""Serializers built once per thread (portal.api.prototypes) answer exactly what a serializer built for the one call
answers: the same detail and list bodies, the same errors for bad input, and a context (the instant a response is
computed at) of each call's own, in every thread."""
from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework import serializers
from rest_framework.exceptions import ValidationError

from intake import selectors
from workflows.api.serializers import RequestCreateInputSerializer, RequestListSerializer, RequestSerializer
from workflows.services import request_approve
from portal.api.prototypes import represent, validate
from portal.errors import PermissionDenied
from tests.conftest import VALID_ANSWERS
from tests.factories import request_submit_via_api

pytestmark = pytest.mark.django_db

NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 8, "image": "ghcr.io/example/notebook:1.0"}


@pytest.fixture
def requests_in_several_states(api, engineer, platform_user, inventory, django_capture_on_commit_callbacks):
    """A pending request, an approved one with a lease and its approval events, and a rejected one."""
    pending = request_submit_via_api(api, engineer, name="pending")["id"]
    leased = request_submit_via_api(api, engineer, name="leased", answers=NOTEBOOK)["id"]
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=platform_user, request_id=leased, comment="ok")
    rejected = request_submit_via_api(api, engineer, name="rejected")["id"]
    assert api(platform_user).post(f"/api/v1/requests/{rejected}/reject/", {"comment": "no"},
                                   format="json").status_code == 200
    return [pending, leased, rejected]


def test_a_detail_is_what_a_serializer_built_for_it_gives(engineer, requests_in_several_states):
    now = timezone.now()
    for request_id in requests_in_several_states:
        gpu_request = selectors.request_get(user=engineer, request_id=request_id)

        fresh = RequestSerializer(gpu_request, context={"now": now}).data
        reused = represent(RequestSerializer, gpu_request, context={"now": now})
        again = represent(RequestSerializer, gpu_request, context={"now": now})

        assert reused == fresh == again
    assert fresh["lease_seconds_left"] is None and reused["events"]  # the rejected one: events, no lease


def test_the_api_list_is_what_a_serializer_built_for_it_gives_with_and_without_decisions(
        api, engineer, requests_in_several_states):
    for expand in (False, True):
        rows = list(selectors.request_list_rows(user=engineer, with_decision=expand))
        fresh = RequestListSerializer(rows, many=True, context={"expand_decision": expand}).data

        body = api(engineer).get("/api/v1/requests/" + ("?expand=decision" if expand else "")).json()

        assert body["results"] == fresh and len(fresh) == 3
        assert ("decision" in body["results"][0]) is expand
        # The flat-row lookup (portal.api.rows) gives what DRF's own field by field lookup gives.
        drf = RequestListSerializer(context={"expand_decision": expand})
        assert fresh == [serializers.Serializer.to_representation(drf, row) for row in rows]
        # Times in UTC said on the field (portal.api.fields.DateTimeField) read as DRF's default field writes them.
        assert [item["created_at"] for item in fresh] == [
            serializers.DateTimeField().to_representation(row["created_at"]) for row in rows]
        assert fresh[0]["updated_at"].endswith("Z")


def test_each_answer_is_computed_at_its_own_instant(api, engineer, requests_in_several_states):
    """The instant a response's times are computed at lives in the call's context: a reused serializer that kept
    the first call's would show the same time left forever."""
    leased = requests_in_several_states[1]
    first = api(engineer).get(f"/api/v1/requests/{leased}/").json()["lease_seconds_left"]
    time.sleep(1.1)
    second = api(engineer).get(f"/api/v1/requests/{leased}/").json()["lease_seconds_left"]

    assert first > second > first - 5


def test_threads_representing_at_once_each_keep_their_own_context(engineer, requests_in_several_states):
    gpu_request = selectors.request_get(user=engineer, request_id=requests_in_several_states[1])
    expires = gpu_request.lease_expires_at
    start, failures = threading.Barrier(8), []

    def work(offset_seconds: int) -> None:
        now = expires - timedelta(seconds=offset_seconds)
        start.wait()
        for _ in range(200):
            left = represent(RequestSerializer, gpu_request, context={"now": now})["lease_seconds_left"]
            if left != offset_seconds:
                failures.append((offset_seconds, left))

    threads = [threading.Thread(target=work, args=(1000 * (i + 1),)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert failures == []


@pytest.mark.parametrize("body", [
    None, [], "text", {}, {"team": 5, "name": "x", "answers": VALID_ANSWERS},
    {"team": "team-a", "name": "Not A Label", "answers": {"workload_class": "nope"}},
])
def test_bad_input_gets_the_errors_is_valid_gives(team_a, body):
    serializer = RequestCreateInputSerializer(data=body)
    with pytest.raises(ValidationError) as classic:
        serializer.is_valid(raise_exception=True)

    with pytest.raises(ValidationError) as reused:
        validate(RequestCreateInputSerializer, body)

    assert reused.value.detail == classic.value.detail


def test_good_input_gets_the_validated_data_is_valid_gives(team_a):
    body = {"team": "team-a", "name": "ok", "answers": VALID_ANSWERS}
    serializer = RequestCreateInputSerializer(data=body)
    assert serializer.is_valid()

    assert validate(RequestCreateInputSerializer, body) == serializer.validated_data


def test_an_unknown_team_is_the_same_403_either_way(team_a):
    body = {"team": "no-such-team", "name": "ok", "answers": VALID_ANSWERS}
    with pytest.raises(PermissionDenied) as classic:
        RequestCreateInputSerializer(data=body).is_valid(raise_exception=True)
    with pytest.raises(PermissionDenied) as reused:
        validate(RequestCreateInputSerializer, body)

    assert str(reused.value) == str(classic.value)
