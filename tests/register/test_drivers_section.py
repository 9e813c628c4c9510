"""Section 5, driver lifecycle per pool: given declared pools, nodes recorded by discovery, live requests with a
driver floor, recorded owners and planned upgrades, the register shows the versions, the pinned requests, who owns
the upgrades ("nobody", inherited, when no signed-off decision names an owner), the next upgrade and its impact."""
from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from provisioning.models import Cluster
from register.choices import DecisionArea
from register.sections import drivers
from register.services import driver_upgrade_plan_record, platform_decision_record, platform_decision_sign_off
from kubesim import nodes as k
from tests.register.conftest import INFERENCE, TRAINING, build_section, item, sync

pytestmark = pytest.mark.django_db


def own(user, owner, *, cluster="gpu-east", pool=None, sign=True):
    cluster = Cluster.objects.get(name=cluster)
    decision = platform_decision_record(user=user, area=DecisionArea.DRIVER_LIFECYCLE, cluster=cluster,
                                        pool=cluster.pools.get(name=pool) if pool else None, value={}, owner=owner,
                                        rationale="monthly maintenance window")
    return platform_decision_sign_off(user=user, decision_id=decision.pk) if sign else decision


def plan(user, version, days, *, pool="h100-train", cluster="gpu-east"):
    cluster = Cluster.objects.get(name=cluster)
    return driver_upgrade_plan_record(user=user, cluster=cluster, pool=cluster.pools.get(name=pool) if pool else None,
                                      target_version=version,
                                      planned_for=timezone.now().date() + datetime.timedelta(days=days))


def test_an_unowned_driver_lifecycle_is_inherited_as_nobody(inventory):
    section = build_section(drivers)

    h100 = item(section, "gpu-east/h100-train")
    assert (h100["verdict"], h100["owner"], h100["signed_off_at"]) == ("inherited", "nobody", None)
    assert h100["state"] == ("570.124.06 on 4 nodes (declared; no node seen); upgrades owned by nobody; no upgrade "
                             "planned")
    assert h100["notes"] == ["Nobody owns this pool's driver upgrades: no signed-off decision names an owner."]
    assert h100["evidence"]["source"] == "declared" and h100["evidence"]["upgrade_owner"] == "nobody"
    assert {i["owner"] for i in section["items"]} == {"nobody"}
    assert section["summary"]["pools_owned_by_nobody"] == [i["subject"] for i in section["items"]]


def test_a_signed_off_cluster_owner_covers_its_pools_and_a_draft_does_not(inventory, platform_user):
    own(platform_user, "gpu-infra")
    own(platform_user, "someone", cluster="gpu-west", sign=False)

    section = build_section(drivers)

    east = item(section, "gpu-east/l40s-shared")
    assert (east["verdict"], east["owner"], east["signed_off_by"], east["rationale"]) == (
        "decided", "gpu-infra", "pat", "monthly maintenance window")
    assert east["notes"] == ["gpu-infra owns the driver upgrades of every pool of gpu-east."]
    west = item(section, "gpu-west/b200-train")
    assert (west["verdict"], west["owner"]) == ("inherited", "nobody")
    assert west["notes"] == ["A decision owned by someone is recorded but not signed off, so it does not count."]


def test_a_pool_owner_overrides_the_clusters(inventory, platform_user):
    own(platform_user, "gpu-infra")
    own(platform_user, "training-infra", pool="h100-train")
    section = build_section(drivers)
    assert item(section, "gpu-east/h100-train")["owner"] == "training-infra"
    assert item(section, "gpu-east/h200-mig")["owner"] == "gpu-infra"


def test_versions_come_from_the_nodes_and_a_node_off_the_declared_driver_is_a_conflict(inventory, platform_user):
    own(platform_user, "gpu-infra")
    sync("gpu-east", nodes=[k.h100_node("gpu-h100-1"), k.h100_node("gpu-h100-2", driver="580.65.06")])

    h100 = item(build_section(drivers), "gpu-east/h100-train")

    assert h100["evidence"]["driver_versions"] == {"570.124.06": 1, "580.65.06": 1}
    assert h100["evidence"]["source"] == "nodes"
    assert h100["verdict"] == "conflict"
    assert h100["evidence"]["conflicts"] == [
        "h100-train declares driver 570.124.06; nodes run 570.124.06, 580.65.06."]
    assert h100["state"].startswith("570.124.06 on 1 node, 580.65.06 on 1 node; upgrades owned by gpu-infra")


def test_pinned_requests_and_the_next_upgrade_with_the_requests_it_would_strand(inventory, platform_user, engineer,
                                                                                engineer_b, team_a, team_b, place):
    own(platform_user, "gpu-infra")
    floor560 = place(engineer, team_a, "floor560", {**TRAINING, "min_driver_major": 560})
    floor565 = place(engineer_b, team_b, "floor565", {**TRAINING, "min_driver_major": 565}, "approved")
    place(engineer, team_a, "no-floor", TRAINING)
    place(engineer, team_a, "pending", {**TRAINING, "min_driver_major": 565}, "pending_approval")  # not live
    place(engineer, team_a, "chat", INFERENCE)  # another pool
    later = plan(platform_user, "580.65.06", 40)
    sooner = plan(platform_user, "560.35.03", 10)
    plan(platform_user, "550.90.07", 5, pool="h200-mig")

    h100 = item(build_section(drivers), "gpu-east/h100-train")

    assert h100["evidence"]["pinned_requests"] == [
        {"request_id": floor560.pk, "team": "team-a", "name": "floor560", "status": "running",
         "min_driver_major": 560},
        {"request_id": floor565.pk, "team": "team-b", "name": "floor565", "status": "approved",
         "min_driver_major": 565}]
    upgrade = h100["evidence"]["next_upgrade"]
    assert (upgrade["id"], upgrade["target_version"], upgrade["scope"], upgrade["overdue"]) == (
        sooner.pk, "560.35.03", "pool", False)
    impact = h100["evidence"]["impact"]
    assert impact["requests_checked"] == 3
    assert [(a["name"], a["reason"], a["requested_by"]) for a in impact["affected"]] == [
        ("floor565", "asks for driver 565 or newer", "oscar")]
    assert h100["notes"][-1] == (
        f"Next planned upgrade: 560.35.03 on {sooner.planned_for:%Y-%m-%d}; it would strand "
        f"#{floor565.pk} team-b/floor565 (asks for driver 565 or newer).")
    assert later.pk != upgrade["id"]


def test_a_cluster_wide_plan_applies_to_every_pool_and_an_overdue_one_says_so(inventory, platform_user):
    plan(platform_user, "580.65.06", -3, pool=None)
    section = build_section(drivers)
    a100 = item(section, "gpu-east/a100-mig-small")
    assert (a100["evidence"]["next_upgrade"]["scope"], a100["evidence"]["next_upgrade"]["overdue"]) == ("cluster", True)
    assert "(overdue: still planned)" in a100["notes"][-1]
    assert item(section, "gpu-west/b200-train")["evidence"]["next_upgrade"] is None
