"""MIG plans from proposal to the node, over HTTP against the fake API server, with the test playing mig-manager
(it patches the node's `nvidia.com/mig.config.state`): given a MIG request decided for 3g.71gb slices and H200 nodes
that were since reconfigured to all-1g.18gb, when the platform team proposes and approves a plan, then the portal
cordons the idle node, waits for its GPU pods, sets the layout, follows mig-manager to success and uncordons,
recording every step; a node stuck in `pending` past its deadline is reported and left cordoned."""
from __future__ import annotations

import datetime

import pytest
from django.test import Client
from django.utils import timezone

from workflows.services import request_submit
from portal.errors import Conflict, InvalidInput, PermissionDenied
from provisioning.inventory_sync import inventory_sync
from provisioning.mig_plans import mig_plan_advance, mig_plan_approve, mig_plan_cancel, mig_plan_propose
from provisioning.models import MigPlan, MigPlanStep
from tests.conftest import VALID_ANSWERS
from kubesim import nodes as k
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db

STATE = "nvidia.com/mig.config.state"
NODE = "gpu-h200-2"


@pytest.fixture
def waiting_for_slices(east_live, live_fake, engineer, team_a):
    """A pending request for 2 x 3g.71gb on h200-mig, whose nodes now both run all-1g.18gb."""
    gpu_request = request_submit(user=engineer, team=team_a, name="llm",
                                 raw_answers={**VALID_ANSWERS, "gpu_memory_gb": 60, "replicas": 2})
    assert (gpu_request.decision.mig_profile, gpu_request.decision.node_pool) == ("3g.71gb", "h200-mig")
    live_fake.remove("v1", "Pod", "serve-1", "gpu-team-a")
    for name in ("gpu-h200-1", NODE):
        live_fake.put(k.h200_mig_node(name, layout="all-1g.18gb"))
    assert inventory_sync(cluster=east_live).status == "synced"
    return gpu_request


@pytest.fixture
def plan(waiting_for_slices, east_live, platform_user):
    outcome = mig_plan_propose(user=platform_user, cluster=east_live)
    assert outcome.plan is not None, outcome.message
    return outcome.plan


def node(fake):
    return fake.get("v1", "Node", NODE)


def play_mig_manager(fake, state, layout=None):
    labels = {STATE: state}
    patch = {"metadata": {"labels": labels}}
    if layout:  # what GFD and the device plugin advertise once the layout is applied
        labels |= k.mig_labels("H200-141GB", layout)
        patch["status"] = {"allocatable": {**k.mig_resources("H200-141GB", layout),
                                           "nvidia.com/mig-1g.18gb": str(16)}}
    fake.patch("v1", "Node", NODE, None, patch)


def test_the_proposal_names_the_node_the_layout_the_cost_and_the_demand(plan, waiting_for_slices):
    [step] = plan.steps.all()
    assert (plan.status, step.node_name, step.from_config, step.to_config) == (
        "draft", NODE, "all-1g.18gb", "all-balanced")  # gpu-h200-1 serves a running slice; -2 is idle
    assert (step.estimated_seconds_min, step.estimated_seconds_max, step.affected_workloads) == (240, 480, [])
    assert step.gains == {"1g.18gb": -40, "2g.35gb": 8, "3g.71gb": 8} and step.node.name == NODE
    assert plan.demand == [{"pool": "h200-mig", "gpu_model": "H200-141GB", "profile": "3g.71gb", "devices": 2,
                            "free": 0, "requests": [f"#{waiting_for_slices.pk} team-a/llm (pending_approval)"]}]
    assert plan.summary == "1 node to change; unmet: 2 x 3g.71gb on h200-mig."
    assert step.log[0]["to"] == "pending" and step.log[0]["message"].endswith("meets 2 x 3g.71gb.")


def test_approved_plan_runs_to_done_with_every_step_recorded(plan, live_fake, platform_user_2, eager_celery,
                                                            django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        mig_plan_approve(user=platform_user_2, plan_id=plan.pk)

    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "labelled" and step.cordoned_by_portal
    assert node(live_fake)["spec"]["unschedulable"] is True
    labels = node(live_fake)["metadata"]["labels"]
    assert labels["nvidia.com/mig.config"] == "all-balanced" and STATE not in labels
    assert MigPlan.objects.get(pk=plan.pk).status == "executing"

    play_mig_manager(live_fake, "pending")
    assert mig_plan_advance(plan_id=plan.pk) == "executing"
    assert MigPlanStep.objects.get(pk=step.pk).state == "reconfiguring"
    assert mig_plan_advance(plan_id=plan.pk) == "executing"  # still pending: nothing new is logged

    play_mig_manager(live_fake, "success", layout="all-balanced")
    assert mig_plan_advance(plan_id=plan.pk) == "done"

    step.refresh_from_db()
    assert [(e["from"], e["to"]) for e in step.log] == [
        ("", "pending"), ("pending", "cordoned"), ("cordoned", "draining"), ("draining", "labelled"),
        ("labelled", "reconfiguring"), ("reconfiguring", "uncordoned"), ("uncordoned", "done")]
    assert step.log[3]["message"] == ("Set nvidia.com/mig.config=all-balanced (was all-1g.18gb). No GPU pod was left "
                                      "on the node.")
    assert step.finished_at and "unschedulable" not in node(live_fake)["spec"]
    plan = MigPlan.objects.get(pk=plan.pk)
    assert (plan.status, plan.message, plan.approved_by) == ("done", "All 1 node reconfigured.", platform_user_2)
    patches = [r.body for r in live_fake.requests if r.method == "PATCH" and r.path.endswith(f"/nodes/{NODE}")]
    assert patches == [
        {"spec": {"unschedulable": True}},
        {"metadata": {"labels": {"nvidia.com/mig.config": "all-balanced", STATE: None}}},
        {"spec": {"unschedulable": None}},
    ]


def test_a_node_stuck_in_pending_past_its_deadline_is_reported_and_left_cordoned(plan, live_fake, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    start = timezone.now()
    mig_plan_advance(plan_id=plan.pk, now=start)
    play_mig_manager(live_fake, "pending")
    mig_plan_advance(plan_id=plan.pk, now=start + datetime.timedelta(seconds=60))

    status = mig_plan_advance(plan_id=plan.pk, now=start + datetime.timedelta(seconds=901))

    step = MigPlanStep.objects.get(plan=plan)
    assert status == "failed" and step.state == "stuck"
    assert step.message.startswith(f"{NODE}: still pending 900 s after the label was set (deadline ")
    assert "The node is left cordoned" in step.message
    assert node(live_fake)["spec"]["unschedulable"] is True
    plan = MigPlan.objects.get(pk=plan.pk)
    assert plan.status == "failed" and plan.message.startswith(f"Step 1 ({NODE}) stuck:")
    assert mig_plan_advance(plan_id=plan.pk) == "failed"  # a finished plan is left alone


def test_mig_manager_that_never_answers_is_stuck_too(plan, live_fake, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    start = timezone.now()
    mig_plan_advance(plan_id=plan.pk, now=start)
    mig_plan_advance(plan_id=plan.pk, now=start + datetime.timedelta(seconds=901))
    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "stuck" and "no answer from mig-manager (no state label)" in step.message


def test_a_failed_reconfiguration_fails_the_plan_and_leaves_the_node_cordoned(plan, live_fake, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    mig_plan_advance(plan_id=plan.pk)
    play_mig_manager(live_fake, "failed")

    assert mig_plan_advance(plan_id=plan.pk) == "failed"
    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "failed" and step.message.startswith("mig-manager reports failed for all-balanced")
    assert node(live_fake)["spec"]["unschedulable"] is True


def test_the_drain_waits_for_gpu_pods_then_proceeds(plan, live_fake, platform_user):
    live_fake.put(k.gpu_pod("late", node=NODE, resources={"nvidia.com/mig-1g.18gb": 1}, request_id=77))
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    start = timezone.now()

    mig_plan_advance(plan_id=plan.pk, now=start)
    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "draining"
    assert step.message.startswith(f"Waiting for 1 GPU pod on {NODE} to finish") and "gpu-team-a/late" in step.message
    assert "nvidia.com/mig.config" not in [k_ for r in live_fake.requests if r.method == "PATCH"
                                          for k_ in ((r.body.get("metadata") or {}).get("labels") or {})]

    live_fake.patch_status("v1", "Pod", "late", "gpu-team-a", {"phase": "Succeeded"})
    mig_plan_advance(plan_id=plan.pk, now=start + datetime.timedelta(seconds=30))
    assert MigPlanStep.objects.get(plan=plan).state == "labelled"


def test_at_the_drain_deadline_the_label_is_set_and_the_interrupted_pods_are_named(plan, live_fake, platform_user):
    live_fake.put(k.gpu_pod("stubborn", node=NODE, resources={"nvidia.com/mig-1g.18gb": 1}))
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    start = timezone.now()
    mig_plan_advance(plan_id=plan.pk, now=start)

    mig_plan_advance(plan_id=plan.pk, now=start + datetime.timedelta(seconds=3601))

    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "labelled"
    assert step.message.endswith("The drain deadline passed with 1 GPU pod still running, interrupted by the "
                                 "reconfiguration: gpu-team-a/stubborn.")


def test_a_node_cordoned_by_someone_else_stays_cordoned(plan, live_fake, platform_user):
    live_fake.patch("v1", "Node", NODE, None, {"spec": {"unschedulable": True}})
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    mig_plan_advance(plan_id=plan.pk)
    play_mig_manager(live_fake, "success", layout="all-balanced")

    assert mig_plan_advance(plan_id=plan.pk) == "done"
    step = MigPlanStep.objects.get(plan=plan)
    assert not step.cordoned_by_portal and node(live_fake)["spec"]["unschedulable"] is True
    assert "stays cordoned as it was found" in step.log[-2]["message"]


def test_a_node_whose_layout_changed_since_the_plan_is_not_touched(plan, live_fake, platform_user):
    live_fake.patch("v1", "Node", NODE, None, {"metadata": {"labels": {"nvidia.com/mig.config": "all-3g.71gb"}}})
    mig_plan_approve(user=platform_user, plan_id=plan.pk)

    assert mig_plan_advance(plan_id=plan.pk) == "failed"
    step = MigPlanStep.objects.get(plan=plan)
    assert step.message == f"{NODE} now runs all-3g.71gb, not all-1g.18gb as planned; propose a new plan."
    assert "unschedulable" not in node(live_fake)["spec"]


def test_transient_errors_wait_for_the_next_advance(plan, live_fake, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    live_fake.fail_next("PATCH", rf"/nodes/{NODE}$", 503, message="apiserver is restarting")

    assert mig_plan_advance(plan_id=plan.pk) == "executing"
    step = MigPlanStep.objects.get(plan=plan)
    assert step.state == "pending" and step.message.startswith("Will retry at the next advance")

    mig_plan_advance(plan_id=plan.pk)
    assert MigPlanStep.objects.get(plan=plan).state == "labelled"


def test_a_refused_write_fails_the_step(plan, live_fake, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    live_fake.fail_next("PATCH", rf"/nodes/{NODE}$", 403, message=f'nodes "{NODE}" is forbidden')
    assert mig_plan_advance(plan_id=plan.pk) == "failed"
    assert MigPlanStep.objects.get(plan=plan).message.startswith("The API server refused:")


def test_only_the_platform_team_plans_approves_and_cancels(plan, engineer, east_live, platform_user):
    with pytest.raises(PermissionDenied):
        mig_plan_propose(user=engineer, cluster=east_live)
    with pytest.raises(PermissionDenied):
        mig_plan_approve(user=engineer, plan_id=plan.pk)
    with pytest.raises(PermissionDenied):
        mig_plan_cancel(user=engineer, plan_id=plan.pk)
    assert mig_plan_cancel(user=platform_user, plan_id=plan.pk).status == "cancelled"
    with pytest.raises(Conflict, match="only a draft can be approved"):
        mig_plan_approve(user=platform_user, plan_id=plan.pk)


def test_one_plan_at_a_time_per_cluster(plan, east_live, platform_user):
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    second = mig_plan_propose(user=platform_user, cluster=east_live).plan
    with pytest.raises(Conflict, match="Another MIG plan is being executed on gpu-east"):
        mig_plan_approve(user=platform_user, plan_id=second.pk)
    mig_plan_advance(plan_id=plan.pk)
    with pytest.raises(Conflict, match="runs to its end"):
        mig_plan_cancel(user=platform_user, plan_id=plan.pk)


def test_nothing_to_plan_and_a_cluster_never_synced(inventory, east_live, platform_user):
    from provisioning.models import Cluster

    with pytest.raises(InvalidInput, match="has never been synced"):
        mig_plan_propose(user=platform_user, cluster=Cluster.objects.get(name="gpu-west"))
    inventory_sync(cluster=east_live)
    outcome = mig_plan_propose(user=platform_user, cluster=east_live)
    assert outcome.plan is None and outcome.message.endswith("No MIG demand is waiting for slices: nothing to change.")


def test_the_beat_advances_active_plans(plan, platform_user, eager_celery):
    from provisioning import tasks

    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    assert tasks.mig_plans_advance.apply().get() == 1
    assert MigPlanStep.objects.get(plan=plan).state == "labelled"
    assert tasks.mig_plan_advance.name == "provisioning.mig_plan_advance"


def test_the_admin_proposes_shows_and_approves_plans(waiting_for_slices, east_live, platform_user, live_fake):
    client = Client()
    client.force_login(platform_user)

    response = client.post("/admin/provisioning/cluster/", {"action": "propose_mig_plan",
                                                            "_selected_action": [east_live.pk]}, follow=True)
    plan = MigPlan.objects.get()
    assert f"Plan #{plan.pk} for gpu-east" in response.content.decode()

    page = client.get(f"/admin/provisioning/migplan/{plan.pk}/change/").content.decode()
    assert "all-balanced" in page and "240-480 s (8 GPUs x 30-60 s + 0 s of running work)" in page

    client.post("/admin/provisioning/migplan/", {"action": "approve_plans", "_selected_action": [plan.pk]})
    assert MigPlan.objects.get(pk=plan.pk).status == "approved"


def test_engineers_and_finance_cannot_open_mig_plans(plan, engineer, finance_user):
    for user in (engineer, finance_user):
        client = Client()
        client.force_login(user)
        assert client.get(f"/admin/provisioning/migplan/{plan.pk}/change/").status_code in (302, 403)
