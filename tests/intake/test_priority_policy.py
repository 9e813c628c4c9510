"""Priority and preemption are decided per workload class by the policy, like the sharing strategy: given the
shipped policy, when an engineer previews a request through the API, then the decision carries the class's tier,
whether it may be preempted (after how long, where the cluster's scheduler can hold that) and its checkpoint grace,
each with a reason naming the rule, and the summary says in plain words what the engineer gets. Without a rule the
request inherits the scheduler's defaults, marked as a default. A rule with a malformed priority is refused in the
admin, field by field."""
from __future__ import annotations

import json

import pytest
from django.test import Client

from intake.decisions import Decision, Priority
from intake.models import PolicyVersion, Rule
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create, policy_version_sign_off
from tests.support.admin import change_form_data

pytestmark = pytest.mark.django_db

TRAINING = {"workload_class": "training", "tenancy": "dedicated", "latency": "batch", "gpu_memory_gb": 60,
            "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3"}
INFERENCE = {"workload_class": "inference", "tenancy": "multi_tenant", "latency": "latency_sensitive",
             "gpu_memory_gb": 16, "image": "nvcr.io/nvidia/tritonserver:25.01-py3"}
NOTEBOOK = {"workload_class": "development", "tenancy": "multi_tenant", "latency": "latency_sensitive",
            "gpu_memory_gb": 8, "image": "ghcr.io/example/notebook:1.0"}


def preview(api, user, answers) -> Decision:
    response = api(user).post("/api/v1/intake/preview/", {"team": "team-a", "answers": answers}, format="json")
    assert response.status_code == 200, response.json()
    return Decision.from_json(response.json()["decision"])


def test_training_yields_to_production_inference_after_two_hours_with_ten_minutes_to_checkpoint(
        api, engineer, inventory):
    decision = preview(api, engineer, TRAINING)

    assert decision.cluster == "gpu-east"  # Volcano: its cdp plugin holds a minimum runtime per pod
    assert decision.priority == Priority(tier="training", preemptible=True, preempts=True, grace_seconds=600,
                                         min_runtime_minutes=120, min_runtime_enforced=True, rule="training-priority")
    [reason] = decision.reasons_for("priority")
    assert (reason.source, reason.rule) == ("policy", "training-priority")
    assert ("may be stopped for production inference after at least 2 hours; you get 10 minutes to checkpoint "
            "after SIGTERM") in decision.summary
    assert not decision.reasons_for("min_runtime")


def test_inference_is_never_preempted_and_a_notebook_never_preempts(api, engineer, inventory):
    inference = preview(api, engineer, INFERENCE)
    assert inference.priority.tier == "production-inference" and not inference.priority.preemptible
    assert "production inference priority, never stopped to make room for other work" in inference.summary

    notebook = preview(api, engineer, NOTEBOOK)
    assert notebook.priority == Priority(tier="development", preemptible=True, preempts=False, grace_seconds=300,
                                         rule="development-priority")
    assert ("may be stopped for production inference or training at any time; you get 5 minutes to checkpoint "
            "after SIGTERM; it never preempts others") in notebook.summary


def test_a_minimum_runtime_the_cluster_cannot_hold_is_said_and_not_promised(api, engineer, inventory):
    east = inventory[0]
    east.gang_scheduler = "kueue"  # Kueue v0.19 has no minimum runtime (kubernetes-sigs/kueue#9596)
    east.save(update_fields=["gang_scheduler"])

    decision = preview(api, engineer, TRAINING)

    assert decision.priority.min_runtime_minutes == 120 and not decision.priority.min_runtime_enforced
    [reason] = decision.reasons_for("min_runtime")
    assert reason.source == "cluster" and "minimum runtime of 2 hours is not held on this cluster" in reason.text
    assert "may be stopped for production inference at any time" in decision.summary


def test_without_a_priority_rule_the_scheduler_s_defaults_are_inherited_and_marked(api, engineer, inventory):
    active = PolicyVersion.objects.get(status="active")
    Rule.objects.filter(version=active, key="inference-priority").delete()

    decision = preview(api, engineer, INFERENCE)

    assert decision.priority is None
    [reason] = decision.reasons_for("priority")
    assert reason.source == "default" and reason.rule is None
    assert "30 seconds between SIGTERM and SIGKILL" in reason.text
    assert "came from defaults, not decisions" in decision.summary


@pytest.mark.parametrize("priority, message", [
    ({"tier": "urgent", "preemptible": True, "grace_seconds": 60}, "priority.tier must be one of"),
    ({"tier": "training", "preemptible": True}, "priority.grace_seconds is needed for preemptible work"),
    ({"tier": "training", "preemptible": "yes", "grace_seconds": 60}, "priority.preemptible must be true or false"),
    ({"tier": "training", "preemptible": True, "grace_seconds": 7200}, "priority.grace_seconds must be a whole"),
    ({"tier": "production-inference", "preemptible": False, "min_runtime_minutes": 60},
     "min_runtime_minutes applies only to preemptible work"),
])
def test_the_admin_refuses_a_malformed_priority_field_by_field(platform_user, priority, message):
    draft = policy_version_draft_create(user=platform_user)
    client = Client()
    client.force_login(platform_user)
    url = f"/admin/intake/policyversion/{draft.pk}/change/"
    page = client.get(url)
    index = list(draft.rules.order_by("position", "id").values_list("key", flat=True)).index("training-priority")
    outcome = {"priority": priority}
    data = change_form_data(page, **{f"rules-{index}-outcome": json.dumps(outcome)})

    response = client.post(url, data)

    assert response.status_code == 200  # the form again, with the error
    assert message in response.content.decode()
    assert Rule.objects.get(version=draft, key="training-priority").outcome["priority"]["tier"] == "training"


def test_the_preview_s_manifests_carry_the_priority_to_the_scheduler(api, engineer, inventory):
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a", "answers": TRAINING}, format="json")
    manifests = response.json()["manifests"]

    [priority_class] = [m for m in manifests if m["kind"] == "PriorityClass"]
    assert (priority_class["metadata"]["name"], priority_class["value"]) == ("gpu-portal-training", 10000)
    assert priority_class["preemptionPolicy"] == "PreemptLowerPriority"
    assert [m["kind"] for m in manifests].index("PriorityClass") < [m["kind"] for m in manifests].index("PodGroup")
    [job] = [m for m in manifests if m["kind"] == "Job"]
    pod = job["spec"]["template"]
    assert pod["spec"]["priorityClassName"] == "gpu-portal-training"
    assert pod["spec"]["terminationGracePeriodSeconds"] == 600
    assert pod["metadata"]["annotations"]["volcano.sh/cooldown-time"] == "7200s"  # gpu-east runs Volcano
    [group] = [m for m in manifests if m["kind"] == "PodGroup"]
    assert group["spec"]["priorityClassName"] == "gpu-portal-training"


def test_a_rule_without_a_checkpoint_grace_leaves_kubernetes_default_marked_as_a_default(
        api, engineer, platform_user, inventory):
    draft = policy_version_draft_create(user=platform_user)
    Rule.objects.filter(version=draft, key="inference-priority").update(
        outcome={"priority": {"tier": "production-inference", "preemptible": False}})
    policy_version_sign_off(user=platform_user, version_id=draft.pk,
                            reviewed_digest=policy_version_diff(version=draft).digest)

    decision = preview(api, engineer, INFERENCE)

    assert decision.priority.grace_seconds == 30
    [reason] = decision.reasons_for("grace")
    assert reason.source == "default" and "Kubernetes' default 30 seconds" in reason.text
