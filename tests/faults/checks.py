"""What the fault tests do as users (over HTTP) and read as auditors (the private database, the fake cluster)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tests.conftest import VALID_ANSWERS
from kubesim.server import FakeKubeAPI

from .harness import PortalStack, wait_until

# What an inference request (VALID_ANSWERS: MIG on gpu-east, the fake) puts in the cluster, labelled with its id.
INFERENCE_KINDS = (("apps/v1", "Deployment"), ("v1", "Service"), ("policy/v1", "PodDisruptionBudget"))


def submit(stack: PortalStack, name: str, *, user: str = "alice", answers: dict | None = None) -> int:
    answer = stack.api(user).post("/api/v1/requests/", {"team": "vision", "name": name,
                                                        "answers": answers or VALID_ANSWERS})
    assert answer.status == 201, answer.text
    assert answer.json["status"] == "pending_approval"
    return answer.json["id"]


def approve(stack: PortalStack, request_id: int, *, user: str = "pat") -> dict:
    answer = stack.api(user).post(f"/api/v1/requests/{request_id}/approve/", {})
    assert answer.status == 200, answer.text
    # The answer reads the request after the commit, and the worker may already have started on it.
    assert answer.json["status"] in ("approved", "provisioning", "failed"), answer.json["status"]
    assert any(e["to_status"] == "approved" and e["actor"] == user for e in answer.json["events"])
    return answer.json


def request_status(stack: PortalStack, request_id: int) -> str:
    return stack.query("select status from intake_gpurequest where id = %s", [request_id])[0][0]


@dataclass
class Job:
    id: int
    kind: str
    status: str
    attempts: int
    message: str
    dispatched_at: datetime | None
    started_at: datetime | None
    finished_at: datetime | None


def jobs(stack: PortalStack, request_id: int) -> list[Job]:
    rows = stack.query(
        "select id, kind, status, attempts, message, dispatched_at, started_at, finished_at "
        "from provisioning_provisioningjob where request_id = %s order by id", [request_id])
    return [Job(*row) for row in rows]


def wait_for_job(stack: PortalStack, request_id: int, *statuses: str, kind: str = "apply",
                 timeout: float = 60) -> Job:
    def done():
        found = [j for j in jobs(stack, request_id) if j.kind == kind]
        return found[0] if found and found[0].status in statuses else None

    return wait_until(done, timeout=timeout, interval=0.2,
                      message=f"the {kind} job of request #{request_id} to be {' or '.join(statuses)}")


def transitions(stack: PortalStack, request_id: int) -> list[tuple[str, str]]:
    return stack.query("select from_status, to_status from intake_requestevent where request_id = %s "
                       "and kind = 'transition' order by at, id", [request_id])


def cluster_events(stack: PortalStack, request_id: int, reason: str) -> list[str]:
    rows = stack.query("select comment from intake_requestevent where request_id = %s and kind = 'cluster' "
                       "and reason = %s order by id", [request_id, reason])
    return [comment for (comment,) in rows]


def objects_in_cluster(fake: FakeKubeAPI, request_id: int) -> dict[str, list[str]]:
    """The request's objects stored by the fake API server, by kind (found by the request-id label)."""
    selector = f"gpu-portal.io/request-id={request_id}"
    return {kind: [o["metadata"]["name"] for o in fake.find(api_version, kind, None, selector)]
            for api_version, kind in INFERENCE_KINDS}


def one_set_of_objects(fake: FakeKubeAPI, request_id: int, name: str) -> bool:
    """Exactly the Deployment, Service and PodDisruptionBudget of this request, once each."""
    base = f"{name}-r{request_id}"
    return objects_in_cluster(fake, request_id) == {
        "Deployment": [base], "Service": [base], "PodDisruptionBudget": [f"{base}-pdb"]}


def writes_to(fake: FakeKubeAPI, path_suffix: str, since: int = 0) -> list:
    return [r for r in fake.requests[since:] if r.method == "PATCH" and r.path.endswith(path_suffix)]
