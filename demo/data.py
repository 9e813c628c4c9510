"""Demo data for the quickstart: teams, people, a declared cluster inventory, a few requests and last month's
GPU usage (demo.usage), all made through the same services a real user goes through. Idempotent."""
from __future__ import annotations

from decimal import Decimal

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from chargeback.budget_services import budget_create
from chargeback.budgets import team_budget
from .usage import load_demo_usage
from intake.choices import RequestStatus
from intake.models import GpuRequest
from workflows.services import request_approve, request_reject, request_submit
from portal.models import Team
from portal.services import team_upsert, token_issue, user_upsert
from provisioning.demo import CLUSTERS
from provisioning.inventory import cluster_declare, team_quota_set
from provisioning.mig_plans import mig_plan_approve, mig_plan_propose
from provisioning.models import Cluster, GangPolicy, MigPlan
from register.demo import load_demo_register

DEMO_PASSWORD = "gpu-portal-demo"

TEAMS = [
    ("vision", "Computer Vision", "CC-1001"),
    ("nlp", "Language Models", "CC-1002"),
    ("recsys", "Recommendations", "CC-2040"),
]

USERS = [
    ("alice", "engineer", ["vision"]),
    ("bob", "engineer", ["nlp"]),
    ("carol", "engineer", ["recsys", "vision"]),
    ("pat", "platform", []),
    ("quinn", "platform", []),
    ("fiona", "finance", []),
]

# GPU equivalents each team may hold per strategy.
QUOTAS = {
    "vision": {"whole_gpu": 32, "mig": 4, "time_slicing": 2},
    "nlp": {"whole_gpu": 16, "mig": 8, "time_slicing": 2},
    "recsys": {"whole_gpu": 8, "mig": 4, "time_slicing": 1},
}

REQUESTS = [
    # (team, name, requester, answers, then)
    ("vision", "resnet-sweep", "alice", {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 60, "gpus_per_replica": 8, "replicas": 4, "image": "nvcr.io/nvidia/pytorch:25.01-py3",
     "command": ["torchrun", "train.py"], "expected_hours": 12}, None),
    ("nlp", "chat-serving", "bob", {"workload_class": "inference", "tenancy": "multi_tenant",
     "latency": "latency_sensitive", "gpu_memory_gb": 16, "replicas": 2,
     "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "expected_hours": 720}, "approve"),
    ("nlp", "tokenizer-notebook", "bob", {"workload_class": "development", "tenancy": "multi_tenant",
     "latency": "batch", "gpu_memory_gb": 8, "image": "jupyter/base-notebook:latest"}, None),
    ("recsys", "patient-embeddings", "carol", {"workload_class": "development", "tenancy": "multi_tenant",
     "latency": "batch", "data_sensitivity": "regulated", "gpu_memory_gb": 10,
     "image": "nvcr.io/nvidia/pytorch:25.01-py3"}, None),
    ("recsys", "ranker-batch", "carol", {"workload_class": "inference", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 30, "image": "ghcr.io/example/ranker:1.4.2", "expected_hours": 6}, "reject"),
]


@transaction.atomic
def load_demo() -> dict:
    for slug, name, cost_center in TEAMS:
        # Where stalled-gang and failure notices go; in development the e-mail backend prints them (worker log).
        team_upsert(slug=slug, name=name, cost_center=cost_center, notification_email=f"{slug}-team@example.com")
    users = {}
    for username, role, teams in USERS:
        user, _ = user_upsert(username=username, role=role, team_slugs=teams, password=DEMO_PASSWORD,
                              email=f"{username}@example.com")
        # Each run prints fresh tokens (a clear token cannot be read back) and retires the previous run's.
        _, token = token_issue(user=user, name="demo", replace=True)
        users[username] = (user, token)
    for spec in CLUSTERS:
        spec = dict(spec)
        cluster_declare(pools=spec.pop("pools"), **spec)
    for slug, quotas in QUOTAS.items():
        for strategy, amount in quotas.items():
            team_quota_set(team=Team.objects.get(slug=slug), strategy=strategy, gpu_equivalents=amount)
    platform = users["pat"][0]
    for team_slug, name, requester, answers, then in REQUESTS:
        team = Team.objects.get(slug=team_slug)
        if GpuRequest.objects.filter(team=team, name=name).exists():
            continue
        gpu_request = request_submit(user=users[requester][0], team=team, name=name, raw_answers=answers)
        if then == "approve" and gpu_request.status == RequestStatus.PENDING_APPROVAL:
            request_approve(user=platform, request_id=gpu_request.pk, comment="Demo: approved.")
        elif then == "reject":
            request_reject(user=platform, request_id=gpu_request.pk,
                           comment="Demo: batch inference fits the nightly MIG window; resubmit as multi-tenant.")
    # Chargeback: last month's GPU usage of the demo teams, through the real ingestion path, and rate cards.
    load_demo_usage(users={name: user for name, (user, _) in users.items()})
    # A budget for vision this month: its requests' preview says what share of what is left they would take.
    vision, today = Team.objects.get(slug="vision"), timezone.now().date()
    if team_budget(team=vision, month=today) is None:
        budget_create(user=platform, team=vision, month=today, amount=Decimal("30000"), currency="EUR",
                      note="Demo budget")
    # Platform decision register: some decisions signed off, some inherited.
    load_demo_register(users={name: user for name, (user, _) in users.items()})
    return {name: token for name, (_, token) in users.items()}


# Requests that run on the simulated cluster (`manage.py simulate_cluster --demo-flows`, started by scripts/demo
# with the scenario of docs/simulated-cluster.md): a long training gang, a short job that completes, a gang the
# scenario stalls, and MIG demand the current layouts cannot meet, for a MIG plan to execute.
FLOW_REQUESTS = [
    # (team, name, requester, answers, approve)
    ("vision", "detector-pretrain", "alice", {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 60, "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3",
     "command": ["torchrun", "pretrain.py"], "expected_hours": 48}, True),
    ("vision", "eval-checkpoints", "carol", {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 60, "gpus_per_replica": 1, "replicas": 1, "image": "nvcr.io/nvidia/pytorch:25.01-py3",
     "command": ["python", "eval.py"], "expected_hours": 1}, True),
    ("nlp", "llm-pretrain", "bob", {"workload_class": "training", "tenancy": "dedicated", "latency": "batch",
     "gpu_memory_gb": 60, "gpus_per_replica": 8, "replicas": 2, "image": "nvcr.io/nvidia/pytorch:25.01-py3",
     "command": ["torchrun", "pretrain.py"], "expected_hours": 24}, True),
    ("nlp", "embedding-serving", "bob", {"workload_class": "inference", "tenancy": "multi_tenant",
     "latency": "latency_sensitive", "gpu_memory_gb": 60, "replicas": 10,
     "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "expected_hours": 720}, False),
]


def load_demo_flows(*, cluster_name: str, training_stall_after_seconds: int = 60) -> str:
    """Submit (and approve) the requests that run on the simulated cluster, then propose and approve a MIG plan for
    the demand left unmet. Idempotent; returns a line per step for the command's output.

    The training gang policy's stall threshold is shortened (default 1 minute instead of 15) so that the stalled
    gang is flagged within the demo's first minutes; the admin's gang policy page shows and resets it."""
    GangPolicy.objects.filter(workload_class="training").update(stall_after_seconds=training_stall_after_seconds)
    User = get_user_model()
    platform, reviewer = User.objects.get(username="pat"), User.objects.get(username="quinn")
    lines = []
    for team_slug, name, requester, answers, approve in FLOW_REQUESTS:
        team = Team.objects.get(slug=team_slug)
        if GpuRequest.objects.filter(team=team, name=name).exists():
            continue
        with transaction.atomic():
            gpu_request = request_submit(user=User.objects.get(username=requester), team=team, name=name,
                                         raw_answers=answers)
            if approve and gpu_request.status == RequestStatus.PENDING_APPROVAL:
                request_approve(user=platform, request_id=gpu_request.pk, comment="Demo: approved.")
        gpu_request.refresh_from_db()
        lines.append(f"demo request {team_slug}/{name}: {gpu_request.status} on {gpu_request.decision.cluster}"
                     f" ({gpu_request.decision.node_pool})")
    cluster = Cluster.objects.get(name=cluster_name)
    if not MigPlan.objects.filter(cluster=cluster).exists():
        outcome = mig_plan_propose(user=platform, cluster=cluster)
        lines.append(outcome.message)
        if outcome.plan is not None:
            mig_plan_approve(user=reviewer, plan_id=outcome.plan.pk)
            lines.append(f"MIG plan #{outcome.plan.pk} approved by quinn")
    return "\n".join(lines)
