"""The stall on the request API and page: the current stall, the GPU-hours burnt, and list queries that stay
constant with stalls present."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from provisioning.models import Cluster, GangStall
from provisioning.reconcile import status_reconcile
from tests.provisioning.reconcile import pods as k8s
from tests.provisioning.reconcile.conftest import minutes, pods_of

pytestmark = pytest.mark.django_db


def stalled(provision, name, now=minutes(16)):
    """A training request whose gang has 3 of 4 pods running since minute 1 and is stalled at `now`."""
    gpu_request = provision(name)
    pods = pods_of(gpu_request)
    moved = [k8s.moved(p, k8s.running(p, "gpu-h100-01", minutes(1))) for p in pods[:3]]
    moved.append(k8s.moved(pods[3], k8s.unschedulable(pods[3], minutes(0))))
    status_reconcile(cluster=Cluster.objects.get(name="gpu-east"), pods=moved, now=now)
    return gpu_request


def test_the_detail_shows_the_current_stall_and_the_burnt_gpu_hours(provision, api, engineer):
    gpu_request = stalled(provision, "train")
    body = api(engineer).get(f"/api/v1/requests/{gpu_request.pk}/").json()
    assert body["status"] == "stalled"
    stall = body["stall"]
    assert (stall["running_pods"], stall["pending_pods"], stall["gpu_equivalents_running"]) == (3, 1, "24.000000")
    assert stall["started_at"] == "2026-03-02T09:01:00Z" and stall["ended_at"] is None
    assert stall["pending"][0]["reason"] == "Unschedulable" and stall["notified_at"] == "2026-03-02T09:16:00Z"
    # Open: burnt up to now (wall-clock now is long after minute 1 of the test's day).
    assert float(body["burnt_gpu_hours"]) > 6 and body["burnt_gpu_hours"] == stall["burnt_gpu_hours"]
    transition = next(e for e in body["events"] if e["to_status"] == "stalled")
    assert transition["reason"] == "GangStalled" and transition["comment"].startswith("3 of 4 pods of the gang")


def test_the_list_query_count_stays_constant_with_stalls(provision, api, platform_user):
    client = api(platform_user)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get("/api/v1/requests/?page_size=50")
        assert response.status_code == 200
        return len(captured)

    for i in range(2):
        stalled(provision, f"a-{i}")
    few = queries()
    for i in range(6):
        stalled(provision, f"b-{i}")
    assert queries() == few


def test_the_request_page_shows_the_stall_and_the_cluster_events_in_plain_words(provision, engineer):
    gpu_request = stalled(provision, "train")
    client = Client()
    client.force_login(engineer)
    page = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert 'data-testid="stall-current"' in page and "Stalled since 2026-03-02 09:01 UTC" in page
    assert "holding 24 GPU-equivalents, while 1 is Pending" in page
    # The cluster's causes in words (the API keeps GangStalled, Unschedulable).
    assert 'provisioning → stalled <span class="muted">(gang stalled)</span>' in page
    assert 'Cluster event <span class="muted">(unschedulable)</span>' in page and "is waiting for a node: 0/12 nodes are available" in page


def test_the_platform_team_sees_policies_stalls_notices_and_runs_in_the_admin(provision, platform_user, engineer,
                                                                            notified_team):
    gpu_request = stalled(provision, "train")
    client = Client()
    client.force_login(platform_user)
    for path in ("gangpolicy", "gangstall", "clusterreconcilestate"):
        assert client.get(f"/admin/provisioning/{path}/").status_code == 200, path
    # The stall's notices are portal notices: listed with every other, and inline on the stall's page.
    stall = GangStall.objects.get(request=gpu_request)
    key = f"gang-stall:{stall.pk}:stalled"
    assert key in client.get("/admin/portal/notice/").content.decode()
    stall_page = client.get(f"/admin/provisioning/gangstall/{stall.pk}/change/")
    assert stall_page.status_code == 200
    assert f"{key} by email" in stall_page.content.decode() and f"{key} by webhook" in stall_page.content.decode()
    page = client.get("/admin/provisioning/gangpolicy/").content.decode()
    assert "training" in page and 'name="form-0-stall_after_seconds"' in page  # editable in the list
    client.force_login(engineer)
    assert client.get("/admin/provisioning/gangpolicy/").status_code == 302  # to the admin's login
