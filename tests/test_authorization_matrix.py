"""Authorisation, as a matrix generated from the URL configuration: every route (API, pages, probes) x every
persona -- anonymous, an engineer of the request's team, an engineer of another team, the platform team,
finance -- with the expected status, and no response ever carries another team's data.

A route added to the URL configuration without a row here fails `test_every_route_is_in_the_matrix`, so the
matrix cannot silently fall behind. (The Django admin's own routes are left to its staff check and the
admin tests; the OIDC callback needs a provider and has its own tests.)"""
from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from django.utils import timezone

from chargeback.models import Budget
from chargeback.periods import month_start
from chargeback.services import period_closable
from intake.models import GpuRequest
from intake.policy_review import policy_version_diff
from intake.services import policy_version_draft_create
from workflows.services import request_submit
from portal.models import ApiToken
from provisioning.models import Cluster
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "engineer", "other_engineer", "platform", "finance")
SECRET_A, SECRET_B = "alpha-secret-workload", "bravo-secret-workload"
A, B = "ra", "rb"  # the objects' keys: team A's request (the one acted on) and team B's

# ((method, url name, kwargs from the objects, body or query), status per role in ROLES order).
R = 302  # a page redirecting an anonymous visitor to the sign-in page (or after a form post)
MATRIX = [
    (("GET", "healthz", {}, None), (200, 200, 200, 200, 200)),
    (("GET", "readyz", {}, None), (200, 200, 200, 200, 200)),
    (("GET", "metrics", {}, None), (401, 401, 401, 401, 401)),  # needs the Prometheus bearer token, not a user
    (("GET", "login", {}, None), (200, 200, 200, 200, 200)),
    (("GET", "oidc_authentication_init", {}, None), (404, 404, 404, 404, 404)),  # SSO not configured here
    (("POST", "logout", {}, None), (R, R, R, R, R)),
    (("GET", "me", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "questionnaire", {}, None), (401, 200, 200, 200, 200)),
    (("POST", "preview", {}, {"team": "team-a", "answers": VALID_ANSWERS}), (401, 200, 403, 200, 403)),
    (("GET", "policy", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "backstage-entities", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "request-list", {}, None), (401, 200, 200, 200, 200)),
    (("POST", "request-list", {}, {"team": "team-a", "name": "new-one", "answers": VALID_ANSWERS}), (401, 201, 403, 201, 403)),
    (("GET", "request-detail", {"pk": A}, None), (401, 200, 404, 200, 200)),
    (("POST", "request-approve", {"pk": A}, {"comment": "ok"}), (401, 403, 404, 200, 403)),
    (("POST", "request-reject", {"pk": A}, {"comment": "no"}), (401, 403, 404, 200, 403)),
    (("POST", "request-cancel", {"pk": A}, {}), (401, 200, 404, 200, 403)),
    # Only the engineer who asked extends a lease (this request has none yet: 409 for its owner).
    (("POST", "request-extend-lease", {"pk": A}, {"hours": 1}), (401, 409, 404, 403, 403)),
    (("GET", "request-fit", {"pk": A}, None), (401, 200, 404, 200, 200)),
    (("GET", "request-wait", {"pk": A}, None), (401, 200, 404, 200, 200)),
    (("GET", "request-rightsizing", {"pk": A}, None), (401, 200, 404, 200, 200)),
    (("GET", "request-manifests", {"pk": A}, None), (401, 200, 404, 200, 200)),
    (("GET", "policy-version-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "policy-version-detail", {"number": "active"}, None), (401, 200, 200, 200, 200)),
    (("GET", "policy-version-detail", {"number": "draft"}, None), (401, 404, 404, 200, 404)),
    (("GET", "policy-version-diff", {"number": "draft"}, None), (401, 404, 404, 200, 404)),
    (("POST", "policy-version-sign-off", {"number": "draft"}, "digest"), (401, 404, 404, 200, 404)),
    (("GET", "cluster-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "cluster-detail", {"pk": "cluster"}, None), (401, 200, 200, 200, 200)),
    (("POST", "cluster-sync", {"pk": "cluster"}, {}), (401, 403, 403, 202, 403)),
    (("PATCH", "cluster-detail", {"pk": "cluster"}, {"description": "east"}), (401, 403, 403, 200, 403)),
    # gpu-east is a GitOps target in this world: the platform team is told to set its API server first.
    (("PUT", "cluster-credentials", {"pk": "cluster"}, {"token": "t"}), (401, 403, 403, 400, 403)),
    (("GET", "cluster-upgrade-impact", {"pk": "cluster", "pool_id": "pool"}, {"driver_version": "580.65.06"}), (401, 403, 403, 200, 403)),
    (("GET", "ops-ping", {}, None), (401, 403, 403, 404, 403)),  # 404 for platform: no worker has pinged yet
    (("POST", "ops-ping", {}, {}), (401, 403, 403, 202, 403)),
    # A team's webhook secret: its members and the platform team; finance reads teams, not their secrets.
    (("GET", "team-webhook", {"slug": "team-a"}, None), (401, 200, 404, 200, 403)),
    (("POST", "team-webhook-rotate-secret", {"slug": "team-a"}, {}), (401, 200, 404, 200, 403)),
    (("GET", "chargeback-report", {}, {"start": "2026-10-01", "end": "2026-11-01"}), (401, 200, 200, 200, 200)),
    (("GET", "rate-card-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "usage-interval-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "adjustment-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "chargeback-focus", {}, {"start": "2026-10-01", "end": "2026-11-01"}), (401, 200, 200, 200, 200)),
    (("GET", "hardware-credit-list", {}, None), (401, 200, 200, 200, 200)),
    (("GET", "closed-period-list", {}, None), (401, 200, 200, 200, 200)),
    (("POST", "closed-period-list", {}, "closable"), (401, 403, 403, 201, 201)),
    (("GET", "usage-collection-list", {}, None), (401, 403, 403, 200, 200)),
    # Budgets: the platform team sets them; finance and the team read them.
    (("GET", "budget-list", {}, None), (401, 200, 200, 200, 200)),
    (("POST", "budget-list", {}, "budget"), (401, 403, 403, 201, 403)),
    (("GET", "budget-detail", {"pk": "budget"}, None), (401, 200, 404, 200, 200)),
    (("PATCH", "budget-detail", {"pk": "budget"}, {"amount": "12"}), (401, 403, 404, 200, 403)),
    (("DELETE", "budget-detail", {"pk": "budget"}, None), (401, 403, 404, 204, 403)),
    (("GET", "register-api", {}, None), (401, 403, 403, 200, 403)),  # the platform team's register
    (("GET", "register-api", {}, {"format": "md"}), (401, 403, 403, 200, 403)),
    (("GET", "register:page", {}, None), (R, 403, 403, 200, 403)),
    (("GET", "schema", {}, None), (200, 200, 200, 200, 200)),  # no team data: public, like most API docs
    (("GET", "swagger-ui", {}, None), (200, 200, 200, 200, 200)),
    (("GET", "chargeback:report", {}, None), (R, 200, 200, 200, 200)),
    (("GET", "chargeback:team-report", {"slug": "team-a"}, None), (R, 200, 404, 200, 200)),
    (("GET", "web:home", {}, None), (R, R, R, R, R)),
    (("GET", "web:request-list", {}, None), (R, 200, 200, 200, 200)),
    (("GET", "web:request-new", {}, None), (R, 200, 200, 200, R)),  # finance requests nothing: back to the list
    (("POST", "web:request-preview", {}, {"team": "team-a"}), (R, 200, 200, 200, 200)),
    (("GET", "web:request-detail", {"pk": A}, None), (R, 200, 404, 200, 200)),
    (("GET", "web:request-live", {"pk": A}, None), (R, 200, 404, 200, 200)),
    # The approval queue is the platform team's; the capacity page the platform team's and engineers'.
    (("GET", "web:approval-queue", {}, None), (R, 403, 403, 200, 403)),
    (("GET", "capacity:page", {}, None), (R, 200, 200, 200, 403)),
    (("POST", "web:request-cancel", {"pk": A}, {}), (R, R, 404, R, R)),
    (("POST", "web:request-lease-extend", {"pk": A}, {"hours": "1"}), (R, R, 404, R, R)),
    # API tokens: everyone manages their own; nobody reaches another's (the platform team does, in the admin).
    (("GET", "tokens", {}, None), (R, 200, 200, 200, 200)),
    (("POST", "tokens", {}, {"name": "matrix"}), (R, 200, 200, 200, 200)),
    (("POST", "token-revoke", {"pk": "tk"}, {}), (R, R, 404, 404, 404)),
    (("GET", "api-token-list", {}, None), (401, 200, 200, 200, 200)),
    (("POST", "api-token-list", {}, {"name": "matrix"}), (401, 201, 201, 201, 201)),
    (("GET", "api-token-detail", {"pk": "tk"}, None), (401, 200, 404, 404, 404)),
]
# Routes a persona matrix does not reach, and why.
NOT_IN_MATRIX = {
    "oidc_authentication_callback": "needs an identity provider; tests/portal/test_oidc.py drives the whole flow",
    None: "the API's JSON 404 for unknown paths (tests/portal/test_api_input_guards.py)",
}


def routes():
    """(name, route) of every URL pattern outside the Django admin and static files."""
    def walk(patterns, prefix="", namespace=None):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                ns = pattern.namespace or namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), ns)
            elif isinstance(pattern, URLPattern):
                name = f"{namespace}:{pattern.name}" if namespace and pattern.name else pattern.name
                yield name, prefix + str(pattern.pattern)
    for name, route in walk(get_resolver().url_patterns):
        if not route.startswith(("admin/", "static/")):
            yield name, route


def test_every_route_is_in_the_matrix():
    covered = {name for (_, name, _, _), _ in MATRIX} | set(NOT_IN_MATRIX)
    missing = sorted(f"{name or '-'} ({route})" for name, route in routes() if name not in covered)
    assert not missing, f"routes without an authorisation row: {missing}"
    stale = sorted(name for (_, name, _, _), _ in MATRIX if name not in {n for n, _ in routes()})
    assert not stale, f"matrix rows for routes that no longer exist: {stale}"


@pytest.fixture
def world(inventory, team_a, team_b, engineer, engineer_b, platform_user, finance_user, settings):
    from django.core.cache import cache

    cache.clear()  # no worker heartbeat from earlier tests
    settings.METRICS_TOKEN = "prometheus-only"
    ra = request_submit(user=engineer, team=team_a, name=SECRET_A, raw_answers=VALID_ANSWERS)
    rb = request_submit(user=engineer_b, team=team_b, name=SECRET_B, raw_answers=VALID_ANSWERS)
    draft = policy_version_draft_create(user=platform_user)
    cluster = Cluster.objects.get(name="gpu-east")
    budget = Budget.objects.create(team=team_a, month=month_start(timezone.now().date()), amount=10)
    return {
        "users": {"anonymous": None, "engineer": engineer, "other_engineer": engineer_b, "platform": platform_user,
                  "finance": finance_user},
        "objects": {"ra": ra.pk, "rb": rb.pk, "active": 1, "draft": draft.number, "cluster": cluster.pk,
                    "pool": cluster.pools.get(name="h100-train").pk, "team-a": "team-a",
                    "tk": ApiToken.objects.get(user=engineer, revoked_at__isnull=True).pk, "budget": budget.pk},
        "bodies": {"digest": {"digest": policy_version_diff(version=draft).digest},
                   "closable": {"month": period_closable().isoformat()},
                   "budget": {"team": "team-a", "cost_center": "CC-A", "month": f"{timezone.now():%Y-%m}",
                              "amount": "10"}},  # last month, none closed yet
        "secrets": {"engineer": SECRET_B, "other_engineer": SECRET_A},
    }


def call(world, role, method, name, kwargs, body):
    user = world["users"][role]
    concrete = {key: world["objects"].get(value, value) for key, value in kwargs.items()}
    url = reverse(name, kwargs=concrete)
    payload = world["bodies"][body] if isinstance(body, str) else body
    if name.startswith(("web:", "chargeback:", "register:", "capacity:")) or name in {"logout", "login", "healthz", "readyz", "metrics",
                                                              "oidc_authentication_init", "swagger-ui", "tokens",
                                                              "token-revoke"}:
        client = Client()
        if user:
            client.force_login(user)
        return client.get(url, payload) if method == "GET" else client.post(url, payload or {})
    client = APIClient()
    if user:
        client.credentials(HTTP_AUTHORIZATION=f"Token {user.api_token}")
    if method == "GET":
        return client.get(url, payload)
    return getattr(client, method.lower())(url, payload or {}, format="json")


CASES = [(role, key, statuses[i]) for key, statuses in MATRIX for i, role in enumerate(ROLES)]


@pytest.mark.parametrize("role,key,expected", CASES,
                         ids=[f"{k[0]} {k[1]}{'/' + '/'.join(map(str, k[2].values())) if k[2] else ''} {r}"
                              for r, k, _ in CASES])
def test_persona_gets_the_expected_status_and_no_other_teams_data(world, role, key, expected):
    method, name, kwargs, body = key
    response = call(world, role, method, name, kwargs, body)
    assert response.status_code == expected, (response.status_code, response.content[:300])
    secret = world["secrets"].get(role)
    if secret:
        content = response.content if not getattr(response, "streaming", False) else b"".join(response)
        assert secret.encode() not in content, f"{role} saw another team's request in {name}"
    if role in ("other_engineer", "finance", "anonymous") and method == "POST" and kwargs.get("pk") == A:
        assert GpuRequest.objects.get(pk=world["objects"]["ra"]).status == "pending_approval"  # nothing changed
