"""/metrics carries the inventory (last sync, failing syncs, discrepancies, GPU equivalents by strategy and state)
and the MIG plans' steps, computed from the database at scrape time."""
from __future__ import annotations

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from provisioning.inventory_sync import inventory_sync
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def metrics_token(settings):
    settings.METRICS_TOKEN = "prometheus"


def scrape() -> dict:
    body = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer prometheus").content.decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def test_inventory_metrics(east_live, live_fake):
    inventory_sync(cluster=east_live)
    inventory_sync(cluster=east_live.__class__.objects.get(name="gpu-west"))
    live_fake.fail_next("GET", r"^/version", 503, times=5)

    before = scrape()
    inventory_sync(cluster=east_live)
    after = scrape()

    assert before[("gpu_portal_inventory_last_sync_timestamp_seconds", (("cluster", "gpu-east"),))] > 0
    assert before[("gpu_portal_inventory_last_sync_timestamp_seconds", (("cluster", "gpu-west"),))] == 0
    assert before[("gpu_portal_inventory_sync_failing", (("cluster", "gpu-east"),))] == 0
    assert after[("gpu_portal_inventory_sync_failing", (("cluster", "gpu-east"),))] == 1
    assert after[("gpu_portal_inventory_sync_failing", (("cluster", "gpu-west"),))] == 0  # GitOps: skipped, fine
    assert before[("gpu_portal_inventory_discrepancies", (("cluster", "gpu-east"),))] == 2
    whole = (("cluster", "gpu-east"), ("state", "free"), ("strategy", "whole_gpu"))
    assert before[("gpu_portal_inventory_gpu_equivalents", whole)] == 20.0
    assert before[("gpu_portal_mig_plan_steps", (("state", "stuck"),))] == 0
    assert before[("gpu_portal_collector_up", (("collector", "provisioning.inventory"),))] == 1
