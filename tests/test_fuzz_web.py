"""Fuzzing the web pages and the admin (hypothesis): every URL pattern of the URL configuration outside the API
(which tests/test_fuzz_api.py covers from its schema), as each persona, with odd path values, query strings and
form bodies. No response may be a server error, and nothing may raise.

The URL list is read from the resolver, so a new page or admin model is fuzzed without anyone listing it. The
run is derandomized with a fixed number of examples per URL: the same inputs every time, bounded in time."""
from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from urllib.parse import quote, urlencode

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import URLResolver, get_resolver
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from chargeback.services import rate_card_create
from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS
from tests.factories import TeamFactory, make_user

MAX_EXAMPLES = 6
# The API has its own fuzzer; the OIDC views talk to the identity provider; logging out ends the session the
# rest of the example needs.
SKIPPED = re.compile(r"^(api/|oidc/|accounts/logout/|admin/logout/)")
CONVERTER = re.compile(r"<(?:(?P<kind>[a-z]+):)?(?P<name>\w+)>")

# Values that have broken parsers, filters and forms before: empty, NUL, signs, huge numbers, dates out of
# range, non-ASCII digits and letters, markup and path tricks.
ODD_VALUES = ["", "\x00", "a\x00b", "-1", "0", "1.5", "abc", "9" * 25, "1e400", "NaN", "9999-12", "9999-12-31",
              "0001-01-01", "2026-13-45", "true", "null", "../..", "%", "<script>", "\u202e", "ｌａｔｅｓｔ",
              "١٢٣", "pytorch:latest", "localhost:99999/x", "team-a", "pending_approval", "1"]
TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
VALUE = st.one_of(st.sampled_from(ODD_VALUES), TEXT)


def _routes(patterns, prefix=""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern), pattern.name or ""


ROUTES = sorted({route: name for route, name in _routes(get_resolver().url_patterns)
                 if not SKIPPED.match(route) and not route.startswith("^")}.items())


def _parameter_names() -> list[str]:
    """Query and form keys worth trying: the admin's own, each admin filter with its lookups, and the pages'."""
    names = {"q", "o", "p", "e", "all", "_popup", "_to_field", "_changelist_filters", "action", "_selected_action",
             "index", "post", "comment", "digest", "days", "month", "start", "end", "group_by", "format", "page",
             "status", "team", "workload_class", "name", "image", "driver_version", "next", "_save", "_continue"}
    for model_admin in admin.site._registry.values():
        for entry in model_admin.list_filter:
            # A field name, (field name, filter class), or a SimpleListFilter with its own parameter.
            field = entry[0] if isinstance(entry, (list, tuple)) else entry
            if isinstance(field, str):
                names.update(f"{field}{lookup}" for lookup in ("", "__exact", "__id__exact", "__gte", "__lt",
                                                               "__in", "__isnull"))
            elif getattr(field, "parameter_name", None):
                names.add(field.parameter_name)
        names.update(f for f in getattr(model_admin, "list_editable", ()))
    names.update(action for model_admin in admin.site._registry.values() for action in (model_admin.actions or ()))
    return sorted(names)


PARAMS = st.dictionaries(st.one_of(st.sampled_from(_parameter_names()), TEXT), VALUE, max_size=4)
ADMIN_MODELS = {f"{model._meta.app_label}_{model._meta.model_name}": model for model in admin.site._registry}


@pytest.fixture
def personas(db, inventory):
    """One user per role, and some data for the pages and admin lists to show."""
    team = TeamFactory(slug="team-a")
    engineer = make_user("fuzz-engineer", "engineer", team)
    platform = make_user("fuzz-platform", "platform")
    request_submit(user=engineer, team=team, name="fuzz-seed", raw_answers=VALID_ANSWERS)
    rate_card_create(user=platform, gpu_model="H100-80GB", strategy="whole_gpu", price_per_equivalent_hour=Decimal("2.5"),
                     currency="EUR", valid_from=date(2026, 1, 1))
    return {"engineer": engineer, "finance": make_user("fuzz-finance", "finance"), "platform": platform}


def _existing_id(name: str) -> str:
    """The id of a real object for an admin URL (`intake_gpurequest_change` -> a GpuRequest), else "1"."""
    for key, model in ADMIN_MODELS.items():
        if name.startswith(key + "_"):
            pk = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
            return str(pk) if pk is not None else "1"
    return "1"


def _path(route: str, name: str, odd: list[str], data) -> str:
    def value(match):
        if match["kind"] == "int":
            return str(data.draw(st.one_of(st.just(int(_existing_id(name))), st.integers(0, 10**30)), match["name"]))
        if match["kind"] == "slug":
            return data.draw(st.sampled_from(["team-a", "no-such-team", "a" * 80]), match["name"])
        if odd:
            return quote(odd.pop(), safe="")
        return _existing_id(name)

    return "/" + CONVERTER.sub(value, route)


def test_every_page_is_fuzzed():
    """The fuzzer reaches the portal's pages and each registered admin model's changelist."""
    routes = {route for route, _ in ROUTES}
    assert {"requests/", "requests/new/", "chargeback/", "register/"} <= routes
    for model in admin.site._registry:
        assert f"admin/{model._meta.app_label}/{model._meta.model_name}/" in routes, model


def test_no_page_errors_on_odd_input(personas):
    # One test walking every route (each with its own derandomized examples), so the data is set up once.
    for route, name in ROUTES:
        _fuzz(route, name, personas)


def _fuzz(route: str, name: str, personas: dict) -> None:
    @hypothesis_settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
    )
    @given(data=st.data())
    def one_route(data):
        persona = data.draw(st.sampled_from(sorted(personas)), "persona")
        method = data.draw(st.sampled_from(["GET", "POST"]), "method")
        odd = [data.draw(VALUE, "path value")] if data.draw(st.booleans(), "odd path") else []
        path = _path(route, name, odd, data)
        query = data.draw(PARAMS, "query")
        client = Client()
        client.force_login(personas[persona])
        if method == "GET":
            response = client.get(path, query)
        else:
            response = client.post(path, data.draw(PARAMS, "body"), QUERY_STRING=urlencode(query))
        assert response.status_code < 500, (persona, method, path, query, response.status_code)

    one_route()


# Values that broke admin filters: NUL (PostgreSQL refuses it in text), non-ASCII digits, a number past every
# integer type (and any year), a date out of range.
FILTER_VALUES = ["a\x00b", "١٢٣", "9" * 25, "2026-13-45"]


def admin_filter_parameters(model_admin, user) -> list[str]:
    """Every query parameter the changelist itself reads: each list filter's own (a SimpleListFilter's
    parameter_name, a field filter's lookups), the date hierarchy's, search, ordering and page."""
    from django.test import RequestFactory

    request = RequestFactory().get("/")
    request.user = user
    changelist = model_admin.get_changelist_instance(request)
    names = {"q", "o"}
    for spec in changelist.filter_specs:
        names.update(spec.expected_parameters())
    if model_admin.date_hierarchy:
        field = model_admin.date_hierarchy
        names.update(f"{field}__{part}" for part in ("year", "month", "day"))
    return sorted(names)


def test_every_admin_changelist_and_filter_takes_odd_values(personas):
    """Deterministic and complete where the random walk above samples: every registered admin changelist, every
    parameter its filters declare, each odd value, as the platform team (who sees every list)."""
    client = Client(raise_request_exception=False)
    client.force_login(personas["platform"])
    tried, failures = 0, []
    for model, model_admin in sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label):
        url = f"/admin/{model._meta.app_label}/{model._meta.model_name}/"
        for name in admin_filter_parameters(model_admin, personas["platform"]):
            for value in FILTER_VALUES:
                tried += 1
                status = client.get(url, {name: value}).status_code
                if status >= 500:
                    failures.append((url, name, value, status))
    assert tried > 400 and not failures, (f"{len(failures)} of {tried} answered 5xx, on "
                                          f"{len({url for url, *_ in failures})} changelists", failures)
