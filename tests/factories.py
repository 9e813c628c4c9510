"""The test kit: factory_boy factories and small builders for the portal's models, made through the services the
product uses (a request through `request_submit`, so through `decide()`), and the requests' API and approval as
the tests drive them. The fixtures built on them (`submitted_request`, `approved_request`, `webhook`) are in
tests/conftest.py and tests/support/webhook.py."""
from __future__ import annotations

import factory

from intake.models import GpuRequest
from workflows.services import request_approve, request_submit
from portal.models import Team
from portal.services import token_issue, user_upsert

# Answers every question needs: a small inference service, which the default policy places on any cluster.
VALID_ANSWERS = {
    "workload_class": "inference",
    "tenancy": "multi_tenant",
    "latency": "latency_sensitive",
    "gpu_memory_gb": 16,
    "image": "nvcr.io/nvidia/tritonserver:25.01-py3",
}


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"team-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.replace("-", " ").title())
    cost_center = factory.Sequence(lambda n: f"CC-{1000 + n}")


def make_user(username: str, role: str, *teams: Team, password: str = "pw-for-tests-1"):
    """A user with one role and team memberships, issued an API token; `user.api_token` keeps its clear value
    (which the database does not) for tests to authenticate with."""
    user, _ = user_upsert(username=username, role=role, team_slugs=[t.slug for t in teams], password=password)
    _, user.api_token = token_issue(user=user, name="tests", replace=True)
    return user


class RequestFactory(factory.Factory):
    """A request made as an engineer makes one: `workflows.services.request_submit`, so it carries the decision
    `decide()` makes for its answers (and the automatic approval the policy gives, if any).
    `RequestFactory(user=engineer, team=team_a, answers={...})`."""

    class Meta:
        model = GpuRequest

    name = factory.Sequence(lambda n: f"request-{n}")
    answers = factory.LazyFunction(lambda: dict(VALID_ANSWERS))

    @classmethod
    def _create(cls, model_class, *, user, team, name, answers):
        return request_submit(user=user, team=team, name=name, raw_answers=answers)


def request_submit_via_api(api, user, *, name: str, answers: dict | None = None, team: str = "team-a") -> dict:
    """POST /api/v1/requests/ as `user` (`api` is the fixture of that name); the 201 response's body."""
    response = api(user).post("/api/v1/requests/", {"team": team, "name": name,
                                                    "answers": VALID_ANSWERS if answers is None else answers},
                              format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def request_approve_now(gpu_request: GpuRequest | int, approver, django_capture_on_commit_callbacks) -> GpuRequest:
    """Approve as `approver` and run what the approval sends after commit (eager Celery runs the tasks); the
    request as it is afterwards (a request given is refreshed in place)."""
    request_id = gpu_request if isinstance(gpu_request, int) else gpu_request.pk
    with django_capture_on_commit_callbacks(execute=True):
        request_approve(user=approver, request_id=request_id)
    if isinstance(gpu_request, int):
        return GpuRequest.objects.get(pk=request_id)
    gpu_request.refresh_from_db()
    return gpu_request
