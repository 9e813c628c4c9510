"""Every admin action as each persona (engineer, finance, platform), generated from the actions registered with the
admin site, so a new action cannot escape: it fails here until it is listed with the roles that may run it and
the service that checks them.

For each action: the changelist offers it exactly to those roles; running it (a POST, as the admin's form sends
it) as anyone else changes nothing; and its service refuses anyone else on its own, so the admin's menu is not
the only guard."""
from __future__ import annotations

import datetime
from decimal import Decimal

import pytest
from django.contrib import admin
from django.core import serializers
from django.test import Client

from chargeback.budget_services import budget_create, budget_delete
from chargeback.models import IdlePolicy, RateCard
from chargeback.services import rate_card_create, rate_card_delete
from intake.models import PolicyVersion
from intake.services import policy_version_draft_create, policy_version_sign_off
from workflows.services import request_approve, request_submit
from portal.errors import PermissionDenied
from provisioning.inventory import team_quota_set
from provisioning.inventory_sync import inventory_sync_request
from provisioning.mig_plans import mig_plan_approve, mig_plan_cancel, mig_plan_propose
from portal.services import tokens_revoke_selected
from provisioning.credentials import credentials_reencrypt
from provisioning.models import Cluster, MigPlan
from register.services import driver_upgrade_plan_record, platform_decision_record, platform_decision_sign_off
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

PERSONAS = ("engineer", "finance", "platform")
PLATFORM = frozenset({"platform"})
NOBODY = frozenset()

# (model, action) -> the roles that may run it. Django's delete_selected is offered wherever the admin lets
# the role delete; everything the platform team configures is deleted by them alone, rate cards also by finance
# (through the rate card service), records and audit trails by nobody.
ROLES = {
    ("intake.PendingApproval", "approve_selected"): PLATFORM,
    ("intake.PolicyVersion", "new_draft"): PLATFORM,
    ("intake.PolicyVersion", "sign_off"): PLATFORM,
    ("provisioning.Cluster", "sync_inventory"): PLATFORM,
    ("provisioning.Cluster", "propose_mig_plan"): PLATFORM,
    ("provisioning.Cluster", "reencrypt_credentials"): PLATFORM,
    ("portal.ApiToken", "revoke"): PLATFORM,
    ("provisioning.MigPlan", "approve_plans"): PLATFORM,
    ("provisioning.MigPlan", "cancel_plans"): PLATFORM,
    ("register.PlatformDecision", "sign_off"): PLATFORM,
    **{(label, "delete_selected"): PLATFORM for label in (
        "portal.Team", "provisioning.Cluster", "provisioning.NodePool", "provisioning.TeamQuota",
        "provisioning.GangPolicy", "chargeback.IdlePolicy", "register.PlatformDecision",
        "register.DriverUpgradePlan")},
    ("chargeback.RateCard", "delete_selected"): frozenset({"platform", "finance"}),
    ("chargeback.Budget", "delete_selected"): PLATFORM,
    **{(label, "delete_selected"): NOBODY for label in (
        "auth.Group", "auth.User", "portal.ApiToken", "portal.Notice", "portal.SignOnIdentity", "intake.GpuRequest", "intake.PendingApproval", "intake.PolicyVersion",
        "provisioning.GpuModel", "provisioning.ProvisioningJob", "provisioning.AppliedObject", "provisioning.Node",
        "provisioning.MigPlan", "provisioning.GangStall",
        "provisioning.ClusterReconcileState", "provisioning.AdmissionWorkload", "chargeback.UsageInterval",
        "chargeback.Adjustment", "chargeback.UsageCollection", "chargeback.ClosedPeriod", "chargeback.IdleAllocation",
        "chargeback.IdleScan", "chargeback.HardwareCredit")},  # a credit is reversed (its own page), never deleted
}

# The service each action calls, called as the admin calls it: it must refuse the roles not listed above.
SERVICES = {
    ("intake.PendingApproval", "approve_selected"): lambda user, obj: request_approve(user=user, request_id=obj.pk),
    ("intake.PolicyVersion", "new_draft"): lambda user, obj: policy_version_draft_create(user=user, based_on=obj),
    ("intake.PolicyVersion", "sign_off"): lambda user, obj: policy_version_sign_off(
        user=user, version_id=obj.pk, reviewed_digest="unreviewed"),
    ("provisioning.Cluster", "sync_inventory"): lambda user, obj: inventory_sync_request(user=user, cluster=obj),
    ("provisioning.Cluster", "propose_mig_plan"): lambda user, obj: mig_plan_propose(user=user, cluster=obj),
    ("provisioning.Cluster", "reencrypt_credentials"): lambda user, obj: credentials_reencrypt(user=user),
    ("portal.ApiToken", "revoke"): lambda user, obj: tokens_revoke_selected(actor=user, token_ids=[obj.pk]),
    ("provisioning.MigPlan", "approve_plans"): lambda user, obj: mig_plan_approve(user=user, plan_id=obj.pk),
    ("provisioning.MigPlan", "cancel_plans"): lambda user, obj: mig_plan_cancel(user=user, plan_id=obj.pk),
    ("register.PlatformDecision", "sign_off"): lambda user, obj: platform_decision_sign_off(
        user=user, decision_id=obj.pk),
    ("chargeback.RateCard", "delete_selected"): lambda user, obj: rate_card_delete(user=user, rate_card=obj),
    ("chargeback.Budget", "delete_selected"): lambda user, obj: budget_delete(user=user, budget=obj),
}


def registered_actions() -> list[tuple[str, str]]:
    found = []
    for model, model_admin in admin.site._registry.items():
        if model_admin.actions is None:  # actions switched off for this admin
            continue
        names = [name for name, _ in admin.site.actions] + [
            action if isinstance(action, str) else action.__name__ for action in model_admin.actions]
        found += [(model._meta.label, name) for name in names]
    return sorted(found)


ACTIONS = registered_actions()


def test_every_registered_action_is_listed_with_its_roles_and_service():
    assert sorted(ROLES) == ACTIONS
    custom = {key for key in ACTIONS if key[1] != "delete_selected"}
    assert custom <= set(SERVICES), f"name the service of: {sorted(custom - set(SERVICES))}"


@pytest.fixture
def world(inventory, team_a, engineer, finance_user, platform_user):
    """One object for each admin whose actions somebody may run, and a user per persona."""
    east = Cluster.objects.get(name="gpu-east")
    request_submit(user=engineer, team=team_a, name="queued", raw_answers=VALID_ANSWERS)
    MigPlan.objects.create(cluster=east, summary="one node to all-balanced", created_by=platform_user)
    platform_decision_record(user=platform_user, area="gang_backend", cluster=east, value={"gang_backend": "volcano"},
                             owner="ml-platform", rationale="Volcano's PodGroup is stable.")
    driver_upgrade_plan_record(user=platform_user, cluster=east, target_version="580.65.06",
                               planned_for=datetime.date(2026, 12, 15))
    rate_card_create(user=platform_user, gpu_model="H100-80GB", strategy="whole_gpu",
                     price_per_equivalent_hour=Decimal("2.50"), currency="EUR", valid_from=datetime.date(2026, 1, 1))
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=8)
    budget_create(user=platform_user, team=team_a, month=datetime.date.today(), amount=Decimal("100"))
    IdlePolicy.objects.create(workload_class="development", threshold_percent=Decimal("5"), idle_after_seconds=7200,
                              release_after_seconds=3600)
    return {"engineer": engineer, "finance": finance_user, "platform": platform_user}


def _admin_url(label: str) -> str:
    app_label, model_name = label.lower().split(".")
    return f"/admin/{app_label}/{model_name}/"


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _target(label: str):
    from django.apps import apps

    return apps.get_model(label)._default_manager.order_by("pk").first()


def _snapshot() -> str:
    """Every row of every model the admin shows, serialized: what an action must not touch when refused."""
    return "".join(serializers.serialize("json", model._default_manager.order_by("pk"))
                   for model in admin.site._registry if not model._meta.proxy)


@pytest.mark.parametrize("persona", PERSONAS)
def test_the_changelist_offers_each_action_to_its_roles_only(world, persona):
    client = _client(world[persona])
    for label in sorted({label for label, _ in ACTIONS}):
        response = client.get(_admin_url(label))
        offered = set()
        if response.status_code == 200 and response.context.get("action_form"):
            offered = {name for name, _ in response.context["action_form"].fields["action"].choices if name}
        expected = {action for key, action in ACTIONS if key == label and persona in ROLES[(key, action)]}
        assert offered == expected, (persona, label)


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("label,action", ACTIONS, ids=[f"{label}.{action}" for label, action in ACTIONS])
def test_running_an_action_through_the_admin_as_each_persona(world, persona, label, action):
    target = _target(label)
    if target is None:
        assert not ROLES[(label, action)], f"seed a {label} in `world` to run {action} against"
        return
    client = _client(world[persona])  # signing in writes last_login: before the snapshot
    before = _snapshot()
    response = client.post(
        _admin_url(label), {"action": action, "_selected_action": [target.pk], "index": 0, "post": "yes"},
        follow=True)
    assert response.status_code < 500
    texts = [str(message) for message in response.context["messages"]] if response.context else []
    if persona in ROLES[(label, action)]:
        # Ran, or (delete_selected) refused for the related rows the cascade would take, e.g. a cluster's nodes.
        assert not any("Only the platform team" in text or "Only finance" in text for text in texts), texts
    else:
        assert _snapshot() == before, (persona, label, action, texts)


@pytest.mark.parametrize("persona", [p for p in PERSONAS if p != "platform"])
@pytest.mark.parametrize("key", sorted(SERVICES), ids=[f"{label}.{action}" for label, action in sorted(SERVICES)])
def test_the_service_behind_each_action_refuses_the_other_roles(world, persona, key):
    if persona in ROLES[key]:
        return
    target = _target(key[0])
    before = _snapshot()
    with pytest.raises(PermissionDenied):
        SERVICES[key](world[persona], target)
    assert _snapshot() == before


def test_finance_cannot_draft_routing_policy_through_the_admin(world):
    """The red-team finding: the "new draft" action was offered to finance, and the service did not check."""
    active = PolicyVersion.objects.get()
    response = _client(world["finance"]).post(
        "/admin/intake/policyversion/", {"action": "new_draft", "_selected_action": [active.pk]}, follow=True)
    assert response.status_code in (200, 403)
    assert PolicyVersion.objects.count() == 1
    assert RateCard.objects.count() == 1  # the rest of the world is untouched too
