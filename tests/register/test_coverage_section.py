"""Section 6, chargeback coverage: given metered usage intervals, the register gives per cluster the share of the
window's GPU-equivalent-hours (clipped to the window, open intervals up to now, in SQL) attributed to a team and a
strategy through an approved request, versus unattributed."""
from __future__ import annotations

import datetime
import uuid

import pytest
from django.utils import timezone

from chargeback.models import UsageInterval
from provisioning.inventory import team_quota_set
from register.sections import coverage
from tests.register.conftest import INFERENCE, NOTEBOOK, build_section, item

pytestmark = pytest.mark.django_db
HOUR = datetime.timedelta(hours=1)


def interval(*, start, end=None, request=None, team=None, cluster="gpu-east", strategy="whole_gpu", num=1, den=1,
             flags=(), category="usage"):
    return UsageInterval.objects.create(
        pod_uid=str(uuid.uuid4()), cluster=cluster, request=request, team=team or (request.team if request else None),
        strategy=strategy, gpu_model="H100-80GB", devices=1, equivalents_num=num, equivalents_den=den,
        started_at=start, ended_at=end, first_seen_at=start, flags=list(flags), category=category)


@pytest.fixture
def now():
    return timezone.now()


def test_attributed_versus_unattributed_gpu_hours_clipped_to_the_window(inventory, engineer, team_a, place, now):
    chat = place(engineer, team_a, "chat", INFERENCE)
    interval(request=chat, start=now - 10 * HOUR, end=now, num=2)  # 20
    interval(request=chat, start=now - 35 * 24 * HOUR, end=now - 29 * 24 * HOUR)  # 6 days, 1 inside: 24
    interval(request=chat, start=now - 40 * 24 * HOUR, end=now - 31 * 24 * HOUR)  # outside the window
    interval(request=chat, start=now - 2 * HOUR, strategy="mig", num=1, den=7)  # open: 2/7
    interval(request=chat, start=now - 2 * HOUR, end=now - HOUR, category="waste")  # a stall's waste: 1
    interval(start=now - 3 * HOUR, end=now)  # no team, no request: 3
    interval(team=team_a, start=now - 2 * HOUR, end=now, num=1, den=2)  # a team, no request: 1

    east = item(build_section(coverage, now=now), "gpu-east")

    evidence = east["evidence"]
    assert {key: evidence[key] for key in ("gpu_equivalent_hours", "attributed", "unattributed", "no_team",
                                           "no_request", "waste", "attributed_share_percent")} == {
        "gpu_equivalent_hours": "49.286", "attributed": "45.286", "unattributed": "4.000", "no_team": "3.000",
        "no_request": "1.000", "waste": "1.000", "attributed_share_percent": 91.9}
    assert evidence["attributed_by_strategy"] == {"mig": "0.286", "whole_gpu": "45.000"}
    assert east["verdict"] == "inherited" and east["owner"] is None
    assert east["state"] == ("91.9% of 49.286 GPU-equivalent-hours attributed to a team and a strategy; 4.000 "
                             "unattributed")
    assert east["notes"] == [
        "3.000 GPU-equivalent-hours belong to no team: nobody decided who pays for them.",
        "1.000 GPU-equivalent-hours have a team but no request the portal knows."]
    west = item(build_section(coverage, now=now), "gpu-west")
    assert (west["verdict"], west["state"]) == ("inherited", "no metered GPU time in the last 30 days")


def test_fully_attributed_hours_of_approved_requests_are_decided_by_their_approvers(inventory, engineer, team_a,
                                                                                   place, now):
    chat = place(engineer, team_a, "chat", INFERENCE)  # approved by pat
    team_quota_set(team=team_a, strategy="time_slicing", gpu_equivalents=1)  # the rule approves only with a quota
    notebook = place(engineer, team_a, "notebook", NOTEBOOK)  # approved automatically by its rule
    interval(request=chat, start=now - 4 * HOUR, end=now)
    interval(request=notebook, start=now - 4 * HOUR, end=now, strategy="time_slicing", num=1, den=4)
    approved_at = chat.events.get(to_status="approved").at

    east = item(build_section(coverage, now=now), "gpu-east")

    assert (east["verdict"], east["owner"], east["signed_off_at"]) == (
        "decided", "pat, policy (automatic approval)", max(approved_at, notebook.events.get(to_status="approved").at))
    assert east["evidence"]["attributed_share_percent"] == 100.0
    assert (east["evidence"]["requests"], east["evidence"]["requests_approved_automatically"]) == (2, 1)
    assert east["notes"] == ["Every GPU-hour belongs to one of 2 approved requests."]


def test_hours_of_a_request_never_approved_are_inherited(inventory, engineer, team_a, place, now):
    waiting = place(engineer, team_a, "waiting", INFERENCE, "pending_approval")
    interval(request=waiting, start=now - HOUR, end=now)
    east = item(build_section(coverage, now=now), "gpu-east")
    assert east["verdict"] == "inherited"
    assert east["notes"] == ["1 of 1 requests with metered hours were never approved."]


def test_an_attribution_the_pod_labels_contradict_is_a_conflict(inventory, engineer, team_a, place, now):
    chat = place(engineer, team_a, "chat", INFERENCE)
    interval(request=chat, start=now - HOUR, end=now, flags=["team_mismatch"])
    east = item(build_section(coverage, now=now), "gpu-east")
    assert east["verdict"] == "conflict" and east["evidence"]["mismatched_intervals"] == 1


def test_usage_of_a_cluster_no_longer_declared_is_still_counted(inventory, now):
    interval(cluster="gpu-old", start=now - HOUR, end=now)
    section = build_section(coverage, now=now)
    assert [i["subject"] for i in section["items"]] == ["gpu-east", "gpu-west", "gpu-old"]
    assert item(section, "gpu-old")["evidence"]["no_team"] == "1.000"
