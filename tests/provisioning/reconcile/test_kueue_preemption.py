"""Kueue preemption seen by the reconciler, over HTTPS against kubesim's Kueue: two development-priority gangs hold
most of the ClusterQueue's quota, a production-priority gang is approved and does not fit, and Kueue evicts one of
them (Evicted, reason Preempted). The reconciler records on the evicted request who preempted it and why, and its
owner is notified once however often the cluster is reconciled.

The shipped policy puts every training gang in one tier, so the two priorities here are Kubernetes-level:
PriorityClasses created over HTTPS and the applied Jobs' pod templates given a `priorityClassName` in the cluster
(without the rendered WorkloadPriorityClass label, which Kueue would read first)."""
from __future__ import annotations

import datetime
from io import StringIO

import pytest
from django.core import mail
from django.core.management import call_command

from workflows.services import request_approve, request_submit
from kubesim import eta, kueue
from kubesim.server import FakeKubeAPI
from portal.models import Notice
from provisioning.inventory import team_quota_set
from provisioning.kube.client import ClusterConnection, KubeClient
from provisioning.models import Cluster
from provisioning.reconcile import cluster_status_reconcile
from provisioning.wait_refresh import request_wait_refresh
from tests.conftest import client_for

NOW = datetime.datetime(2026, 12, 1, 12, 0, tzinfo=datetime.UTC)
GANG = {**eta.TRAINING, "gpus_per_replica": 8, "replicas": 2, "expected_hours": 0.5}  # 16 GPUs of the queue's 40


@pytest.fixture
def kueue_east(inventory):
    fake = FakeKubeAPI.start(git_version="v1.35.2")
    try:
        eta.seed(fake, quota_gpus=40)
        fake.patch(kueue.KUEUE, "ClusterQueue", "gpu-portal", None,
                   {"spec": {"preemption": {"withinClusterQueue": "LowerPriority"}}})
        call_command("register_cluster", "gpu-east", "--server", fake.url, "--token", "t", "--ca-cert-file",
                     fake.ca_file, "--kubernetes-version", "1.35", "--gang-scheduler", "kueue", stdout=StringIO())
        with KubeClient(ClusterConnection(server=fake.url, token="t", ca_cert=fake.ca_pem)) as kube:
            classes = kube.resource("scheduling.k8s.io/v1", "PriorityClass")
            for name, value in (("development", 1000), ("production", 1_000_000)):
                classes.create(body={"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                     "metadata": {"name": name}, "value": value})
        yield fake, Cluster.objects.get(name="gpu-east")
    finally:
        fake.stop()


def _approved(fake, engineer, platform_user, team, name: str, priority_class: str):
    gpu_request = request_submit(user=engineer, team=team, name=name, raw_answers=GANG)
    request_approve(user=platform_user, request_id=gpu_request.pk, comment="preemption test")
    [job] = [j for j in fake.find("batch/v1", "Job")
             if j["metadata"]["labels"].get("gpu-portal.io/request-id") == str(gpu_request.pk)]
    job["spec"]["template"]["spec"]["priorityClassName"] = priority_class
    # The shipped policy gives every training gang the same tier: Kueue would order them by that WorkloadPriorityClass.
    job["metadata"]["labels"].pop("kueue.x-k8s.io/priority-class", None)
    fake.put(job)
    return gpu_request


def _workload_of(fake, gpu_request) -> dict:
    [job] = [j for j in fake.find("batch/v1", "Job")
             if j["metadata"]["labels"].get("gpu-portal.io/request-id") == str(gpu_request.pk)]
    return next(w for w in fake.find(kueue.KUEUE, "Workload")
                if w["metadata"]["ownerReferences"][0]["uid"] == job["metadata"]["uid"])


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_a_kueue_preemption_is_recorded_on_the_evicted_request_and_its_owner_told_once(
        kueue_east, team_a, engineer, platform_user, eager_celery):
    fake, cluster = kueue_east
    engineer.email, team_a.notification_email = "eve@example.com", "team-a@example.com"
    engineer.save(update_fields=["email"])
    team_a.save(update_fields=["notification_email"])
    team_quota_set(team=team_a, strategy="whole_gpu", gpu_equivalents=400)
    low = [_approved(fake, engineer, platform_user, team_a, f"explore-{i}", "development") for i in range(2)]
    kueue.step(fake, now=NOW.timestamp())
    kueue.step(fake, now=NOW.timestamp())
    high = _approved(fake, engineer, platform_user, team_a, "prod-train", "production")
    kueue.step(fake, now=NOW.timestamp() + 60)  # the production gang needs 16 of the 8 left: Kueue preempts

    evicted = [r for r in low if any(c["type"] == "Evicted" and c["reason"] == "Preempted"
                                     for c in _workload_of(fake, r)["status"]["conditions"])]
    assert len(evicted) == 1
    [victim], [spared] = evicted, [r for r in low if r not in evicted]

    def reconcile():
        outcome = cluster_status_reconcile(cluster_id=cluster.pk, watch_seconds=0, clock=lambda: NOW)
        assert outcome.status == "ok", outcome.summary()

    sent = len(mail.outbox)
    reconcile()
    [event] = victim.events.filter(reason="Preempted")
    assert f"to make room for request #{high.pk}" in event.comment
    assert "due to prioritization in the ClusterQueue" in event.comment and "Evicted, reason Preempted" in event.comment
    assert not spared.events.filter(reason="Preempted").exists() and not high.events.filter(reason="Preempted").exists()
    # Its wait explanation says who preempted it and why.
    request_wait_refresh(request_id=victim.pk, now=NOW)  # what the beat's wait refresh runs, now
    wait = client_for(engineer).get(f"/api/v1/requests/{victim.pk}/wait/").json()
    [said] = [b for b in wait["blockers"] if b["source"].startswith("request history")]
    assert said["reason"] == "Preempted" and f"request #{high.pk}" in said["words"]
    assert any(b["reason"] == "Preempted" and "JobUID" in b["message"] for b in wait["blockers"])  # Kueue's own
    reconcile()
    kueue.step(fake, now=NOW.timestamp() + 120)  # the production gang is admitted
    reconcile()
    assert victim.events.filter(reason="Preempted").count() == 1
    told = [m for m in mail.outbox[sent:] if "preempted" in m.subject]
    assert len(told) == 1 and f"request #{victim.pk}" in told[0].subject and engineer.email in told[0].to
    assert Notice.objects.filter(key__startswith="preempted:").count() == 1
