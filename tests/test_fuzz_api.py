"""Fuzzing the API from its own OpenAPI schema (schemathesis): every operation, with an authenticated token, a
bounded number of generated examples each. No response may be a server error or break the schema.

The schema is generated at collection time by the same generator that serves `/api/schema/` (a test below
checks the two are identical), because collecting one test per operation must happen before the database
exists. The web pages and the admin have their own fuzzer, tests/test_fuzz_web.py."""
from datetime import date

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from schemathesis.specs.openapi.checks import positive_data_acceptance

from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS
from tests.factories import TeamFactory, make_user

MAX_EXAMPLES = 25
GENERATED = SchemaGenerator().get_schema(request=None, public=True)

schema = schemathesis.openapi.from_dict(GENERATED)
schema.app = get_wsgi_application()


@pytest.fixture
def platform_token(db, inventory):
    """A platform token (it may call every operation) and some data for the operations to find."""
    team = TeamFactory(slug="fuzz-team")
    engineer = make_user("fuzz-engineer", "engineer", team)
    request_submit(user=engineer, team=team, name="fuzz-seed", raw_answers=VALID_ANSWERS)
    return make_user("fuzz-platform", "platform").api_token


@pytest.fixture(autouse=True)
def keep_the_test_connection():
    """The WSGI handler closes the database connection after each request; the test transaction needs it."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def test_the_fuzzed_schema_is_the_served_one(api, platform_user):
    served = api(platform_user).get("/api/schema/?format=json")
    assert served.status_code == 200 and served.json() == GENERATED


@schema.parametrize()
@hypothesis_settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_no_operation_errors_or_breaks_its_schema(case, platform_token):
    # Every default check (no server error, documented status codes and content types, responses matching
    # the schema, schema-violating input rejected) except "schema-valid input accepted": a well-formed team
    # slug or request id that does not exist is rightly a 400 or 404, which the schema cannot express.
    case.call_and_validate(
        headers={"Authorization": f"Token {platform_token}"}, excluded_checks=[positive_data_acceptance]
    )


def _schema(node: dict) -> dict:
    while "$ref" in node:
        node = GENERATED["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


def _numeric_inputs(node: dict, path: tuple = ()):
    """(path, JSON type) of every writable number or integer in a request body schema, nested ones included."""
    node = _schema(node)
    for combined in ("allOf", "oneOf", "anyOf"):
        for part in node.get(combined, []):
            yield from _numeric_inputs(part, path)
    for name, prop in node.get("properties", {}).items():
        prop = _schema(prop)
        if prop.get("readOnly"):
            continue
        if prop.get("type") in ("number", "integer"):
            yield path + (name,), prop["type"]
        elif prop.get("type") == "array" and _schema(prop.get("items", {})).get("type") in ("number", "integer"):
            yield path + (name,), "array"
        elif "properties" in prop:
            yield from _numeric_inputs(prop, path + (name,))


NUMERIC_INPUTS = [(method.upper(), route, field, kind)
                  for route, operations in GENERATED["paths"].items() for method, operation in operations.items()
                  for field, kind in _numeric_inputs(
                      operation.get("requestBody", {}).get("content", {}).get("application/json", {"schema": {}})
                      ["schema"])]


def test_numeric_inputs_are_found():
    assert {(m, r, f) for m, r, f, _ in NUMERIC_INPUTS} >= {
        ("POST", "/api/v1/requests/{id}/extend-lease/", ("hours",)),
        ("POST", "/api/v1/requests/", ("answers", "gpu_memory_gb")),
        ("POST", "/api/v1/policy/versions/{number}/sign-off/", ("days",))}


@pytest.mark.parametrize("method, route, field, kind", NUMERIC_INPUTS,
                         ids=[f"{m} {r} {'.'.join(f)}" for m, r, f, _ in NUMERIC_INPUTS])
def test_no_number_in_the_api_takes_a_boolean(api, platform_token, platform_user, method, route, field, kind):
    """The strict JSON promise: `true` is not 1 in any field the schema calls a number or an integer."""
    from chargeback.models import Budget
    from intake.models import GpuRequest, PolicyVersion
    from tests.factories import TeamFactory

    budget = Budget.objects.create(team=TeamFactory(slug="fuzz-budget"), month=date.today().replace(day=1),
                                   amount=10)
    ids = {"id": GpuRequest.objects.get(name="fuzz-seed").pk, "number": PolicyVersion.objects.latest("number").number}
    if route.startswith("/api/v1/chargeback/budgets/"):
        ids["id"] = budget.pk
    body: dict = {"team": "fuzz-team", "name": "bools", "answers": dict(VALID_ANSWERS), "month": "2026-01",
                  "amount": "10", "digest": "x"}
    target = body
    for key in field[:-1]:
        target = target.setdefault(key, {})
    target[field[-1]] = [True] if kind == "array" else True
    response = getattr(api(platform_user), method.lower())(route.format(**ids), body, format="json")
    assert response.status_code == 400 and field[-1] in response.content.decode(), (response.status_code,
                                                                                     response.content[:300])


AUTOCOMMIT_EXAMPLES = 6


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_no_operation_errors_outside_a_test_transaction(inventory):
    """Every operation again, as production runs it: each request in autocommit, no test transaction around it.
    A service that locks rows without its own transaction works inside a test's transaction and fails only here
    (the owner's DELETE /api/v1/tokens/{id}/ answered 500 that way while the fuzz above passed). About half the
    examples name objects that exist (the caller's token, the seeded request, a cluster, the active policy), so
    the operations reach their services, not only their 404s."""
    from hypothesis import given
    from hypothesis import strategies as st

    from intake.models import PolicyVersion
    from portal.services import token_issue
    from provisioning.models import Cluster

    team = TeamFactory(slug="fuzz-team")
    engineer = make_user("fuzz-engineer", "engineer", team)
    seeded = request_submit(user=engineer, team=team, name="fuzz-seed", raw_answers=VALID_ANSWERS)
    platform = make_user("fuzz-platform", "platform")
    known = {"requests": seeded.pk, "clusters": Cluster.objects.order_by("pk").first().pk,
             "policy": PolicyVersion.objects.latest("number").number, "teams": "fuzz-team"}
    tried = []
    for result in schema.get_all_operations():
        operation = result.ok()
        # A fresh token each operation: the fuzz may revoke the one it holds (DELETE /api/v1/tokens/{id}/).
        issued, token = token_issue(user=platform, name="fuzz", replace=True)
        existing = {**known, "tokens": issued.pk}.get(operation.path.split("/")[3])

        def name_existing(case_and_choice):
            case, use = case_and_choice
            if use and existing is not None and case.path_parameters:
                case.path_parameters = {name: existing for name in case.path_parameters}
            return case

        @hypothesis_settings(max_examples=AUTOCOMMIT_EXAMPLES, derandomize=True, database=None, deadline=None,
                             suppress_health_check=list(HealthCheck))
        @given(case=st.tuples(operation.as_strategy(), st.booleans()).map(name_existing))
        def call(case):
            response = case.call(headers={"Authorization": f"Token {token}"})
            tried.append(operation.label)
            assert response.status_code < 500, (operation.label, case.path_parameters, case.query, case.body,
                                                response.status_code)

        call()
    assert len(set(tried)) == len(GENERATED_OPERATIONS)


GENERATED_OPERATIONS = [(method, route) for route, operations in GENERATED["paths"].items() for method in operations
                        if method in ("get", "post", "put", "patch", "delete")]
