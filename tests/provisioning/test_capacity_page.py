"""The capacity page (/capacity/): gpu-east registered against the fake API server and synced, requests of two
teams in every state that counts. Its allocated and free figures are the clusters API's; reserved and queued are the
requests' devices; an engineer sees their teams' part and no other team's request; the fragmentation sentence; the
30-day history from the requests' status changes; a fixed number of queries."""
from __future__ import annotations

import itertools
import re
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from intake.models import GpuRequest, PolicyVersion, RequestEvent
from provisioning.inventory_sync import inventory_sync
from provisioning.selectors.capacity_history import capacity_history
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db
_names = itertools.count(1)


def _request(team, user, *, status, pool="h100-train", strategy="whole_gpu", gpu_model="H100-80GB", profile=None,
             per_pod=8, replicas=1, equivalents=None) -> GpuRequest:
    decision = {"strategy": strategy, "gpu_model": gpu_model, "mig_profile": profile, "cluster": "gpu-east",
                "node_pool": pool, "gpus_per_replica": per_pod, "replicas": replicas,
                "gpu_equivalents": equivalents if equivalents is not None else per_pod * replicas}
    return GpuRequest.objects.create(
        team=team, name=f"cap-{next(_names)}", status=status, answers={}, decision=decision,
        policy_version=PolicyVersion.objects.get(status="active"), workload_class="training", strategy=strategy,
        requested_by=user)


@pytest.fixture
def synced(east_live):
    assert inventory_sync(cluster=east_live).status == "synced"
    return east_live


def _page(user) -> str:
    client = Client()
    client.force_login(user)
    response = client.get("/capacity/")
    assert response.status_code == 200
    return response.content.decode()


def _figures(html: str) -> dict[tuple[str, str], dict[str, str]]:
    """(pool, kind) -> {figure: the number shown} from the rendered tables."""
    found = {}
    for pool, table in re.findall(r'data-pool="([^"]+)">(.*?)</table>', html, re.S):
        for kind, row in re.findall(r'<tr data-kind="([^"]+)">(.*?)</tr>', table, re.S):
            found[(pool, kind)] = {name: re.sub(r"<[^>]+>", "", value).strip()
                                   for name, value in re.findall(r'data-figure="(\w+)">(.*?)</td>', row, re.S)}
    return found


def test_allocated_and_free_are_the_clusters_apis_and_reserved_and_queued_the_requests(
        api, platform_user, engineer, engineer_b, team_a, team_b, synced):
    _request(team_a, engineer, status="approved", per_pod=8, replicas=1)           # reserved: 8 GPUs
    _request(team_b, engineer_b, status="provisioning", per_pod=4, replicas=1)     # reserved: 4 GPUs
    _request(team_a, engineer, status="pending_approval", per_pod=8, replicas=2)   # queued: 16 GPUs, 1 request
    _request(team_b, engineer_b, status="pending_approval", pool="h200-mig", strategy="mig", gpu_model="H200-141GB",
             profile="3g.71gb", per_pod=1, replicas=3, equivalents=1.285714)       # queued: 3 slices
    _request(team_a, engineer, status="completed", per_pod=8)                      # counts nowhere

    figures = _figures(_page(platform_user))
    cluster = api(platform_user).get("/api/v1/clusters/").json()["results"]
    pools = {p["name"]: p["capacity"] for c in cluster if c["name"] == "gpu-east" for p in c["pools"]}

    whole = pools["h100-train"]["whole_gpu"]
    assert figures[("gpu-east/h100-train", "whole_gpu")] == {
        "total": f"{whole['devices_total']} GPUs", "allocated": f"{whole['devices_used']} GPUs",
        "free": f"{whole['devices_free']} GPUs", "reserved": "12 GPUs", "queued": "16 GPUs (1 request)"}
    for profile, per in pools["h200-mig"]["mig"]["profiles"].items():
        shown = figures[("gpu-east/h200-mig", f"mig:{profile}")]
        assert (shown["total"], shown["allocated"], shown["free"]) == tuple(
            f"{per[k]} slice{'s' if per[k] != 1 else ''}" for k in ("total", "used", "free")), profile
    assert figures[("gpu-east/h200-mig", "mig:3g.71gb")]["queued"] == "3 slices (1 request)"
    shares = pools["l40s-shared"]["time_slicing"]
    assert figures[("gpu-east/l40s-shared", "time_slicing")]["free"] == f"{shares['devices_free']} shares"


def test_an_engineer_sees_their_teams_part_and_not_another_teams_request(engineer, engineer_b, team_a, team_b,
                                                                          synced):
    mine = _request(team_a, engineer, status="running", per_pod=8)
    theirs = _request(team_b, engineer_b, status="pending_approval", per_pod=8, replicas=2)

    html = _page(engineer)
    figures = _figures(html)[("gpu-east/h100-train", "whole_gpu")]

    assert figures["queued"] == "16 GPUs (1 request)"  # every team's waiting work is counted...
    assert figures["mine"] == "8 / 0 / 0 GPUs"          # ...only team-a's is the engineer's part
    assert theirs.name not in html and f"request #{theirs.pk}" not in html and mine.name not in html
    assert "Your teams" in html


def test_the_fragmentation_names_the_biggest_pod_waiting_and_the_free_gpus_per_node(
        platform_user, engineer, team_a, synced):
    waiting = _request(team_a, engineer, status="pending_approval", per_pod=8, replicas=2)

    html = _page(platform_user)

    # gpu-h100-1 and -2 are full (a training gang), -3 has 6 free (someone's 2-GPU pod), -4 all 8.
    assert (f"1 node (gpu-h100-4) has 8 free GPUs or more (the largest pod waiting here, request #{waiting.pk}); "
            "1 node has 6 besides.") in html
    assert 'id="pool-gpu-east-h100-train"' in html


def test_a_never_synced_cluster_says_so_and_lists_its_declared_pools(platform_user, inventory):
    html = _page(platform_user)
    assert 'data-testid="never-synced"' in html and "2 nodes of 8 GPUs declared" in html


def test_the_history_averages_each_day_from_the_status_changes(engineer, team_a, inventory):
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    gpu_request = _request(team_a, engineer, status="completed", per_pod=8, replicas=2)  # 16 GPU equivalents
    for at, from_status, to_status in [
            (datetime(2026, 11, 28, 0, tzinfo=UTC), "", "pending_approval"),
            (datetime(2026, 11, 28, 12, tzinfo=UTC), "pending_approval", "approved"),
            (datetime(2026, 11, 29, 0, tzinfo=UTC), "approved", "running"),
            (datetime(2026, 11, 29, 6, tzinfo=UTC), "running", "completed")]:
        event = RequestEvent.objects.create(request=gpu_request, from_status=from_status, to_status=to_status)
        RequestEvent.objects.filter(pk=event.pk).update(at=at)
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status_changed_at=datetime(2026, 11, 29, 6, tzinfo=UTC))

    days = {d.day.isoformat(): d for d in capacity_history(team_ids=None, now=now)["gpu-east"]}

    assert len(days) == 30 and min(days) == "2026-11-01" and max(days) == "2026-11-30"
    assert (days["2026-11-28"].queued, days["2026-11-28"].reserved, days["2026-11-28"].held) == (8.0, 8.0, 0.0)
    assert (days["2026-11-29"].held, days["2026-11-29"].mine, days["2026-11-29"].reserved) == (4.0, 4.0, 0.0)
    assert days["2026-11-30"].held == days["2026-11-27"].held == 0.0
    # Another team's engineer sees the same totals and none of it as theirs.
    other = {d.day.isoformat(): d for d in capacity_history(team_ids={-1}, now=now)["gpu-east"]}
    assert (other["2026-11-29"].held, other["2026-11-29"].mine) == (4.0, 0.0)


def test_the_page_reads_a_fixed_number_of_queries(platform_user, engineer, team_a, synced):
    client = Client()
    client.force_login(platform_user)

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get("/capacity/").status_code == 200
        return len(queries)

    _request(team_a, engineer, status="pending_approval")
    few = count()
    for status in ("approved", "provisioning", "running", "pending_approval") * 3:
        _request(team_a, engineer, status=status, pool="l40s-shared", strategy="time_slicing",
                 gpu_model="L40S-48GB", per_pod=1, equivalents=0.25)
    assert count() == few, "one query per request or per pool crept in"
    assert few <= 12


def test_the_approval_review_links_to_the_pools_capacity(platform_user, engineer, team_a, synced):
    from workflows.services import request_submit
    from tests.provisioning.test_waits import GANG

    gpu_request = request_submit(user=engineer, team=team_a, name="linked", raw_answers=GANG)
    client = Client()
    client.force_login(platform_user)
    html = client.get(f"/admin/intake/pendingapproval/{gpu_request.pk}/change/").content.decode()
    assert 'href="/capacity/#pool-gpu-east-h100-train"' in html


def test_finance_is_refused_and_told_why(finance_user, inventory):
    client = Client()
    client.force_login(finance_user)
    assert client.get("/capacity/").status_code == 403


def test_the_history_leaves_out_what_ended_before_the_window(engineer, team_a, inventory):
    now = datetime(2026, 11, 30, 12, tzinfo=UTC)
    old = _request(team_a, engineer, status="completed")
    event = RequestEvent.objects.create(request=old, from_status="", to_status="running")
    RequestEvent.objects.filter(pk=event.pk).update(at=now - timedelta(days=60))
    GpuRequest.objects.filter(pk=old.pk).update(status_changed_at=now - timedelta(days=45))
    assert capacity_history(team_ids=None, now=now) == {}
