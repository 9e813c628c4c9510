"""The Kubernetes calls discovery and MIG plan execution really make (recorded by the fake API server) are all
allowed by the portal's declared RBAC rules (`deploy/rbac.py`), so a cluster set up from the chart or from
`deploy/kubernetes/target-cluster-rbac.yaml` lets them through."""
from __future__ import annotations

from urllib.parse import urlencode

import pytest

from deploy.rbac import Call, check
from workflows.services import request_submit
from provisioning.inventory_sync import inventory_sync
from provisioning.mig_plans import mig_plan_advance, mig_plan_approve, mig_plan_propose
from tests.conftest import VALID_ANSWERS
from kubesim import nodes as k
from tests.provisioning.live_fixtures import east_live, live_fake  # noqa: F401

pytestmark = pytest.mark.django_db


def recorded(fake) -> list[Call]:
    return [Call(r.method, r.path + (f"?{urlencode(r.params)}" if r.params else ""), r.content_type or None)
            for r in fake.requests]


def test_discovery_and_mig_execution_stay_within_the_declared_rules(east_live, live_fake, engineer, team_a,
                                                                    platform_user):
    request_submit(user=engineer, team=team_a, name="llm", raw_answers={**VALID_ANSWERS, "gpu_memory_gb": 60})
    live_fake.remove("v1", "Pod", "serve-1", "gpu-team-a")
    for name in ("gpu-h200-1", "gpu-h200-2"):
        live_fake.put(k.h200_mig_node(name, layout="all-1g.18gb"))
    assert inventory_sync(cluster=east_live).status == "synced"
    plan = mig_plan_propose(user=platform_user, cluster=east_live).plan
    mig_plan_approve(user=platform_user, plan_id=plan.pk)
    mig_plan_advance(plan_id=plan.pk)
    live_fake.patch("v1", "Node", "gpu-h200-2", None,
                    {"metadata": {"labels": {"nvidia.com/mig.config.state": "success"}}})
    assert mig_plan_advance(plan_id=plan.pk) == "done"

    calls = recorded(live_fake)
    result = check(calls)

    assert not result.denied, result.explain()
    used = {(a.verb, a.resource or a.path) for c in calls for a in c.required()}
    assert {("list", "nodes"), ("get", "nodes"), ("patch", "nodes"), ("list", "pods"), ("list", "resourceslices"),
            ("list", "resourceclaims")} <= used
