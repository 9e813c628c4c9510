"""The platform team's writes in the admin (clusters, their inline pools, pools, team quotas) go through
provisioning.cluster_services: a value a rule refuses comes back as an error on its field (never a server error)
and nothing is written; an accepted one is saved, deletions included; and the services refuse anyone but the
platform team on their own, so the admin's permissions are not the only guard."""
from __future__ import annotations

from decimal import Decimal

import pytest
from django.test import Client

from portal.errors import PermissionDenied
from provisioning.cluster_services import (
    cluster_delete,
    cluster_save,
    node_pool_delete,
    node_pool_save,
    team_quota_delete,
    team_quota_save,
)
from provisioning.inventory import team_quota_set
from provisioning.models import Cluster, GpuModel, NodePool, TeamQuota
from tests.support.admin import change_form_data

pytestmark = pytest.mark.django_db


def login(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _inline_prefix(page, name: str) -> str:
    """The form prefix of the inline pool called `name` on a cluster's change page (e.g. "pools-0")."""
    (formset,) = [inline.formset for inline in page.context["inline_admin_formsets"]]
    (form,) = [form for form in formset.forms if form.instance.name == name]
    return form.prefix


def test_an_mps_pool_on_a_dra_cluster_without_the_gate_is_refused_on_the_inline_field(inventory, platform_user):
    west = Cluster.objects.get(name="gpu-west")
    client = login(platform_user)
    url = f"/admin/provisioning/cluster/{west.pk}/change/"
    page = client.get(url)
    prefix = _inline_prefix(page, "b200-train")

    response = client.post(url, change_form_data(page, **{f"{prefix}-sharing_mode": "mps",
                                                           f"{prefix}-time_slicing_replicas": "4"}))

    assert response.status_code == 200  # the form again, with the error on the pool's field
    (formset,) = [inline.formset for inline in response.context["inline_admin_formsets"]]
    errors = [form.errors for form in formset.forms if form.errors]
    assert len(errors) == 1 and "MPSSupport" in errors[0]["sharing_mode"][0], errors
    assert NodePool.objects.get(cluster=west, name="b200-train").sharing_mode == "exclusive"


def test_an_inline_pool_is_changed_and_deleted_with_its_cluster(inventory, platform_user):
    east = Cluster.objects.get(name="gpu-east")
    client = login(platform_user)
    url = f"/admin/provisioning/cluster/{east.pk}/change/"
    page = client.get(url)
    train, shared = _inline_prefix(page, "h100-train"), _inline_prefix(page, "l40s-shared")

    response = client.post(url, change_form_data(page, description="east, rack 4",
                                                 **{f"{train}-node_count": "6", f"{shared}-DELETE": "on"}))

    assert response.status_code == 302, response.context["adminform"].form.errors
    assert Cluster.objects.get(pk=east.pk).description == "east, rack 4"
    assert NodePool.objects.get(cluster=east, name="h100-train").node_count == 6
    assert not NodePool.objects.filter(cluster=east, name="l40s-shared").exists()


def test_replicas_on_an_exclusive_pool_are_refused_on_their_field(inventory, platform_user):
    pool = NodePool.objects.get(name="h100-train")
    client = login(platform_user)
    url = f"/admin/provisioning/nodepool/{pool.pk}/change/"

    response = client.post(url, change_form_data(client.get(url), time_slicing_replicas="4"))

    assert response.status_code == 200
    errors = response.context["adminform"].form.errors
    assert errors["time_slicing_replicas"] == ["Only time-sliced and MPS pools have replicas."]
    assert NodePool.objects.get(pk=pool.pk).time_slicing_replicas is None


def test_a_pool_is_added_through_the_admin_once_its_layout_makes_devices(inventory, platform_user):
    east, h200 = Cluster.objects.get(name="gpu-east"), GpuModel.objects.get(key="H200-141GB")
    client = login(platform_user)
    form = {"cluster": east.pk, "name": "h200-more", "gpu_model": h200.pk, "node_count": "1", "gpus_per_node": "8",
            "sharing_mode": "mig", "mig_strategy": "mixed", "mig_layout": "no-such-layout", "source": "declared",
            "node_selector": "{}", "taints": "[]", "time_slicing_renamed": "on"}

    refused = client.post("/admin/provisioning/nodepool/add/", form)
    assert refused.status_code == 200
    assert "creates no MIG devices" in refused.context["adminform"].form.errors["mig_layout"][0]
    assert not NodePool.objects.filter(name="h200-more").exists()

    accepted = client.post("/admin/provisioning/nodepool/add/", {**form, "mig_layout": "all-balanced"})
    assert accepted.status_code == 302, accepted.context["adminform"].form.errors
    assert NodePool.objects.get(cluster=east, name="h200-more").mig_layout == "all-balanced"


def test_a_pool_is_deleted_through_the_admin(inventory, platform_user):
    pool = NodePool.objects.get(name="a100-mig-small")

    response = login(platform_user).post(f"/admin/provisioning/nodepool/{pool.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not NodePool.objects.filter(pk=pool.pk).exists()


@pytest.mark.parametrize("amount, message", [("-1", "greater than or equal to 0"), ("many", "a number")])
def test_a_bad_quota_is_a_field_error(team_a, platform_user, amount, message):
    response = login(platform_user).post("/admin/provisioning/teamquota/add/", {
        "team": team_a.pk, "strategy": "whole_gpu", "gpu_equivalents": amount})

    assert response.status_code == 200
    assert message in response.context["adminform"].form.errors["gpu_equivalents"][0]
    assert not TeamQuota.objects.exists()


def test_a_second_quota_of_the_same_strategy_is_a_form_error(team_a, platform_user):
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=8)

    response = login(platform_user).post("/admin/provisioning/teamquota/add/", {
        "team": team_a.pk, "strategy": "whole_gpu", "gpu_equivalents": "4"})

    assert response.status_code == 200 and response.context["adminform"].form.errors
    assert TeamQuota.objects.get().gpu_equivalents == 8


def test_quotas_are_added_and_changed_in_the_list(team_a, platform_user):
    client = login(platform_user)
    response = client.post("/admin/provisioning/teamquota/add/", {
        "team": team_a.pk, "strategy": "whole_gpu", "gpu_equivalents": "8"})
    assert response.status_code == 302
    quota = TeamQuota.objects.get()

    response = client.post("/admin/provisioning/teamquota/", {
        "form-TOTAL_FORMS": "1", "form-INITIAL_FORMS": "1", "form-MIN_NUM_FORMS": "0", "form-MAX_NUM_FORMS": "1000",
        "form-0-id": str(quota.pk), "form-0-gpu_equivalents": "12.5", "_save": "Save"})

    assert response.status_code == 302
    assert TeamQuota.objects.get().gpu_equivalents == Decimal("12.5")


def test_finance_sees_quotas_but_cannot_change_them(team_a, finance_user):
    quota = team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=8)
    client = login(finance_user)
    url = f"/admin/provisioning/teamquota/{quota.pk}/change/"
    assert client.get(url).status_code == 200

    response = client.post(url, {"team": team_a.pk, "strategy": "whole_gpu", "gpu_equivalents": "100"})

    assert response.status_code == 403
    assert TeamQuota.objects.get().gpu_equivalents == 8


def test_the_services_refuse_everyone_but_the_platform_team(inventory, team_a, engineer, finance_user):
    east = Cluster.objects.get(name="gpu-east")
    pool = NodePool.objects.get(name="h100-train")
    quota = team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=8)
    east.description, pool.node_count, quota.gpu_equivalents = "mine", 99, Decimal("99")
    writes = [
        lambda user: cluster_save(user=user, cluster=east),
        lambda user: cluster_delete(user=user, cluster=east),
        lambda user: node_pool_save(user=user, pool=pool),
        lambda user: node_pool_delete(user=user, pool=pool),
        lambda user: team_quota_save(user=user, quota=quota),
        lambda user: team_quota_delete(user=user, quota=quota),
    ]
    for user in (engineer, finance_user):
        for write in writes:
            with pytest.raises(PermissionDenied):
                write(user)

    assert Cluster.objects.get(pk=east.pk).description != "mine"
    assert NodePool.objects.get(pk=pool.pk).node_count == 4
    assert TeamQuota.objects.get(pk=quota.pk).gpu_equivalents == 8


def test_a_cluster_is_deleted_through_the_admin(inventory, platform_user):
    west = Cluster.objects.get(name="gpu-west")

    response = login(platform_user).post(f"/admin/provisioning/cluster/{west.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302
    assert not Cluster.objects.filter(pk=west.pk).exists()
    assert not NodePool.objects.filter(cluster_id=west.pk).exists()
