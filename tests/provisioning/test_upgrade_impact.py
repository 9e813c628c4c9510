"""Driver upgrade impact: given requests placed on a pool, some with a driver floor, when the platform team asks
what moving the pool to driver V would do, then the approved, provisioning, running and stalled requests whose floor
(or the GPU's MIG minimum) is above V are listed with their team and owner - in the API and on an admin page."""
from __future__ import annotations

import pytest
from django.test import Client

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from portal.errors import InvalidInput
from provisioning.models import NodePool
from provisioning.selectors import driver_upgrade_impact
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "gpus_per_replica": 8, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}


@pytest.fixture
def placed(inventory, engineer, engineer_b, team_a, team_b, platform_user):
    """On gpu-east/h100-train (declared driver 570.124.06): a running request with floor 560, an approved one
    with floor 565, a floor-less one, a pending one with floor 565; and a MIG request on h200-mig."""

    def make(user, team, name, answers, status):
        gpu_request = request_submit(user=user, team=team, name=name, raw_answers=answers)
        if status != "pending_approval":
            request_approve(user=platform_user, request_id=gpu_request.pk)
            GpuRequest.objects.filter(pk=gpu_request.pk).update(status=status)
        return GpuRequest.objects.get(pk=gpu_request.pk)

    return {
        "floor560": make(engineer, team_a, "floor560", {**TRAINING, "min_driver_major": 560}, "running"),
        "floor565": make(engineer_b, team_b, "floor565", {**TRAINING, "min_driver_major": 565}, "approved"),
        "none": make(engineer, team_a, "no-floor", TRAINING, "stalled"),
        "pending": make(engineer, team_a, "pending", {**TRAINING, "min_driver_major": 565}, "pending_approval"),
        "mig": make(engineer, team_a, "chat", VALID_ANSWERS, "running"),
    }


def pool(name):
    return NodePool.objects.select_related("cluster").get(cluster__name="gpu-east", name=name)


def test_requests_whose_floor_is_above_the_new_driver_are_listed_with_their_owners(placed):
    impact = driver_upgrade_impact(pool=pool("h100-train"), driver_version="560.35.03")

    assert impact["current_driver_versions"] == ["570.124.06"] and impact["requests_checked"] == 3
    assert impact["affected"] == [{
        "request_id": placed["floor565"].pk, "name": "floor565", "status": "approved", "team": "team-b",
        "cost_center": "CC-B", "requested_by": "oscar", "requested_by_email": "", "min_driver_major": 565,
        "strategy": "whole_gpu", "reason": "asks for driver 565 or newer"}]
    lower = driver_upgrade_impact(pool=pool("h100-train"), driver_version="550")
    assert [a["name"] for a in lower["affected"]] == ["floor560", "floor565"]
    assert driver_upgrade_impact(pool=pool("h100-train"), driver_version="580.65.06")["affected"] == []


def test_mig_requests_need_the_gpus_mig_minimum_driver(placed):
    impact = driver_upgrade_impact(pool=pool("h200-mig"), driver_version="550.54.15")
    assert [(a["name"], a["reason"]) for a in impact["affected"]] == [
        ("chat", "MIG on H200-141GB needs driver 550.90.07 or newer")]
    assert driver_upgrade_impact(pool=pool("h200-mig"), driver_version="550.90.07")["affected"] == []


def test_a_malformed_version_names_the_field():
    with pytest.raises(InvalidInput) as raised:
        driver_upgrade_impact(pool=None, driver_version="latest")
    assert raised.value.field == "driver_version"


def test_the_endpoint(api, platform_user, placed):
    east = pool("h100-train")
    url = f"/api/v1/clusters/{east.cluster_id}/pools/{east.pk}/upgrade-impact/"

    body = api(platform_user).get(url, {"driver_version": "560.35.03"}).json()

    assert body["pool"] == "h100-train" and body["driver_major"] == 560
    assert [a["requested_by"] for a in body["affected"]] == ["oscar"]


@pytest.mark.parametrize("query, error", [
    ({}, "This field is required."),
    ({"driver_version": "latest"}, "A driver version such as 580.65.06."),
    ({"driver_version": "58"}, "A driver version such as 580.65.06."),
    ({"driver_version": "580.65.06.1"}, "A driver version such as 580.65.06."),
])  # fmt: skip
def test_bad_versions_are_400_naming_the_field(api, platform_user, inventory, query, error):
    east = pool("h100-train")
    response = api(platform_user).get(f"/api/v1/clusters/{east.cluster_id}/pools/{east.pk}/upgrade-impact/", query)
    assert response.status_code == 400 and response.json() == {"driver_version": [error]}


def test_who_may_ask_and_which_pools_exist(api, engineer, finance_user, platform_user, inventory):
    east, west = pool("h100-train"), NodePool.objects.get(cluster__name="gpu-west")
    url = f"/api/v1/clusters/{east.cluster_id}/pools/{east.pk}/upgrade-impact/?driver_version=580.65.06"

    assert api().get(url).status_code == 401
    for user in (engineer, finance_user):
        assert api(user).get(url).status_code == 403
    assert api(platform_user).get(url).status_code == 200
    wrong_cluster = f"/api/v1/clusters/{east.cluster_id}/pools/{west.pk}/upgrade-impact/?driver_version=580.65.06"
    assert api(platform_user).get(wrong_cluster).status_code == 404
    assert api(platform_user).get(
        f"/api/v1/clusters/{east.cluster_id}/pools/x/upgrade-impact/?driver_version=580.65.06").status_code == 404


def test_the_admin_page_lists_the_affected_requests(platform_user, placed):
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/provisioning/nodepool/{pool('h100-train').pk}/upgrade-impact/"

    page = client.get(url, {"driver_version": "560.35.03"}).content.decode()

    assert "1 of 3 live requests would no longer be schedulable on driver 560.35.03" in page
    assert f"#{placed['floor565'].pk} floor565" in page and "oscar" in page and "asks for driver 565" in page
    assert "A driver version such as 580.65.06." in client.get(url, {"driver_version": "x"}).content.decode()
    assert "runs driver" in client.get(url).content.decode()
