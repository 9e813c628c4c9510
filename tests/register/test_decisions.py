"""Recording platform decisions and driver upgrade plans: only the platform team writes, values are checked per
area, a change takes the sign-off away, and the admin does the same through the services."""
from __future__ import annotations

import datetime

import pytest
from django.db import IntegrityError, transaction
from django.test import Client

from portal.errors import InvalidInput, PermissionDenied
from provisioning.models import Cluster
from register.choices import DecisionArea
from register.models import DriverUpgradePlan, PlatformDecision
from register.services import driver_upgrade_plan_record, platform_decision_record, platform_decision_sign_off

pytestmark = pytest.mark.django_db
DP = {"scheduling_model": "device_plugin"}


@pytest.fixture
def east(inventory):
    return Cluster.objects.get(name="gpu-east")


def record(user, cluster, **overrides):
    fields = {"area": DecisionArea.SCHEDULING_MODEL, "value": DP, "owner": "platform-team",
              "rationale": "until 1.36", **overrides}
    return platform_decision_record(user=user, cluster=cluster, **fields)


def test_a_recorded_decision_counts_once_signed_off(platform_user, platform_user_2, east):
    decision = record(platform_user, east)
    assert (decision.is_signed_off, decision.created_by, decision.subject) == (False, platform_user, "gpu-east")

    signed = platform_decision_sign_off(user=platform_user_2, decision_id=decision.pk)

    assert (signed.signed_off_by, signed.signed_off_by_name) == (platform_user_2, "quinn")
    assert signed.signed_off_at is not None and signed.decided_value == "device_plugin"


def test_changing_a_signed_off_decision_takes_its_sign_off_away(platform_user, east):
    decision = platform_decision_sign_off(user=platform_user, decision_id=record(platform_user, east).pk)
    same = record(platform_user, east, decision_id=decision.pk)
    assert same.is_signed_off  # saved again unchanged: still signed off
    changed = record(platform_user, east, value={"scheduling_model": "dra"}, decision_id=decision.pk)
    assert not changed.is_signed_off and changed.signed_off_by_name == ""
    assert PlatformDecision.objects.count() == 1


def test_only_the_platform_team_records_and_signs_off(engineer, finance_user, platform_user, east):
    for user in (engineer, finance_user):
        with pytest.raises(PermissionDenied):
            record(user, east)
    decision = record(platform_user, east)
    with pytest.raises(PermissionDenied):
        platform_decision_sign_off(user=engineer, decision_id=decision.pk)


@pytest.mark.parametrize("overrides, field", [
    ({"value": {"scheduling_model": "magic"}}, "value"),
    ({"value": {}}, "value"),
    ({"area": DecisionArea.GANG_BACKEND, "value": {"scheduling_model": "dra"}}, "value"),
    ({"area": DecisionArea.DRIVER_LIFECYCLE, "value": {"owner": "x"}}, "value"),
    ({"area": "colour"}, "area"),
    ({"owner": "  "}, "owner"),
    ({"rationale": ""}, "rationale"),
])  # fmt: skip
def test_bad_decisions_name_the_field(platform_user, east, overrides, field):
    with pytest.raises(InvalidInput) as raised:
        record(platform_user, east, **overrides)
    assert raised.value.field == field


def test_pools_belong_to_the_cluster_and_gangs_are_per_cluster(platform_user, east):
    west_pool = Cluster.objects.get(name="gpu-west").pools.get()
    with pytest.raises(InvalidInput) as raised:
        record(platform_user, east, pool=west_pool)
    assert raised.value.field == "pool"
    with pytest.raises(InvalidInput) as raised:
        record(platform_user, east, area=DecisionArea.GANG_BACKEND, value={"gang_backend": "volcano"},
               pool=east.pools.get(name="h100-train"))
    assert raised.value.field == "pool"


def test_one_decision_per_area_and_subject(platform_user, east):
    record(platform_user, east)
    with pytest.raises(InvalidInput) as raised:
        record(platform_user, east)
    assert raised.value.field == "area"
    record(platform_user, east, pool=east.pools.get(name="h100-train"))  # a pool is another subject
    with pytest.raises(IntegrityError), transaction.atomic():  # the database holds the rule too (pool NULL)
        PlatformDecision.objects.create(area=DecisionArea.SCHEDULING_MODEL, cluster=east, value=DP, owner="x",
                                        rationale="y")


def test_driver_upgrade_plans(platform_user, engineer, east):
    plan = driver_upgrade_plan_record(user=platform_user, cluster=east, pool=east.pools.get(name="h100-train"),
                                      target_version="580.65.06", planned_for=datetime.date(2026, 12, 15))
    assert str(plan) == "gpu-east/h100-train -> 580.65.06 on 2026-12-15"
    with pytest.raises(InvalidInput) as raised:
        driver_upgrade_plan_record(user=platform_user, cluster=east, target_version="latest",
                                   planned_for=datetime.date(2026, 12, 15))
    assert raised.value.field == "target_version"
    with pytest.raises(PermissionDenied):
        driver_upgrade_plan_record(user=engineer, cluster=east, target_version="580.65.06",
                                   planned_for=datetime.date(2026, 12, 15))


def test_the_admin_records_and_signs_off_through_the_services(platform_user, engineer, east):
    client = Client()
    client.force_login(platform_user)
    response = client.post("/admin/register/platformdecision/add/", {
        "area": "gang_backend", "cluster": east.pk, "pool": "", "scheduling_model": "", "gang_backend": "volcano",
        "owner": "ml-platform", "rationale": "Volcano's PodGroup is stable."})
    assert response.status_code == 302, response.content.decode()[:2000]
    decision = PlatformDecision.objects.get()
    assert (decision.value, decision.created_by, decision.is_signed_off) == ({"gang_backend": "volcano"},
                                                                             platform_user, False)

    client.post("/admin/register/platformdecision/", {"action": "sign_off", "_selected_action": [decision.pk]})
    decision.refresh_from_db()
    assert decision.signed_off_by_name == "pat"

    bad = client.post("/admin/register/platformdecision/add/", {
        "area": "gang_backend", "cluster": east.pk, "pool": east.pools.get(name="h100-train").pk,
        "gang_backend": "kai", "owner": "x", "rationale": "y"})
    assert bad.status_code == 200 and "The gang backend is chosen per cluster" in bad.content.decode()

    response = client.post("/admin/register/driverupgradeplan/add/", {
        "cluster": east.pk, "pool": "", "target_version": "580.65.06", "planned_for": "2026-12-15",
        "status": "planned", "note": "all pools"})
    assert response.status_code == 302
    assert DriverUpgradePlan.objects.get().created_by == platform_user

    client.force_login(engineer)
    assert client.get("/admin/register/platformdecision/").status_code in (302, 403)
