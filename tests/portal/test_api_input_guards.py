"""Guards every endpoint shares: NUL characters, empty or malformed filters and pagination, unknown API paths,
errors always JSON. Each was found by the schema fuzzer (tests/test_fuzz_api.py) as a 500 or a contract break."""
import pytest

from workflows.services import request_submit
from tests.conftest import VALID_ANSWERS

pytestmark = pytest.mark.django_db


def test_a_nul_character_anywhere_in_the_body_is_a_400_naming_the_field(api, platform_user, inventory):
    client = api(platform_user)
    response = client.post("/api/v1/requests/", {"team": "a\u0000b", "name": "x", "answers": VALID_ANSWERS},
                           format="json")
    assert response.status_code == 400 and "team" in response.json()
    response = client.post("/api/v1/requests/", {"team": "t", "name": "x", "answers": {**VALID_ANSWERS,
                           "command": ["ok", "bad\u0000"]}}, format="json")
    assert response.status_code == 400 and "command" in response.json()["answers"]


def test_a_nul_character_in_a_filter_is_a_400(api, platform_user):
    response = api(platform_user).get("/api/v1/requests/?team=a%00b")
    assert response.status_code == 400 and "team" in response.json()


def test_empty_filters_and_bad_pagination_are_400s_naming_the_parameter(api, platform_user):
    client = api(platform_user)
    assert "gang_scheduler" in client.get("/api/v1/clusters/?gang_scheduler=").json()
    # "³" and "٣" are digits to str.isdigit() but not to int(): they were a 500 (found by the schemathesis fuzz).
    for query in ("page_size=0", "page_size=abc", "page_size=501", "page=0", "page=-1", "page=%C2%B3",
                  "page_size=%D9%A3"):
        response = client.get(f"/api/v1/requests/?{query}")
        assert response.status_code == 400 and query.split("=")[0] in response.json(), query


def test_unknown_api_paths_answer_json_404_even_to_posts(api, platform_user):
    for response in (api(platform_user).get("/api/v1/nothing/"), api().post("/api/v1/requests/abc/approve/")):
        assert response.status_code == 404 and response.json()["code"] == "not_found"


def test_errors_are_json_even_when_yaml_was_asked_for(api, engineer, team_a, inventory):
    response = api(engineer).get("/api/v1/requests/999/manifests/?format=yaml")
    assert response.status_code == 404 and response["Content-Type"] == "application/json"


def test_form_encoded_bodies_are_refused_with_415(api, engineer, team_a, inventory):
    request_submit(user=engineer, team=team_a, name="x", raw_answers=VALID_ANSWERS)
    response = api(engineer).post("/api/v1/intake/preview/", {"team": "team-a"}, format="multipart")
    assert response.status_code == 415


def test_an_oversized_body_is_a_json_413_and_stores_nothing(api, platform_user, inventory):
    from intake.models import GpuRequest

    body = {"team": "team-a", "name": "big", "answers": {**VALID_ANSWERS, "command": ["a" * 2_000_000]}}
    response = api(platform_user).post("/api/v1/requests/", body, format="json")
    assert response.status_code == 413 and response["Content-Type"] == "application/json"
    assert GpuRequest.objects.count() == 0


def test_me_tells_the_caller_who_they_are(api, engineer, platform_user):
    assert api(engineer).get("/api/v1/me/").json() == {"username": "eve", "role": "engineer", "teams": ["team-a"]}
    assert api(platform_user).get("/api/v1/me/").json()["role"] == "platform"
    assert api().get("/api/v1/me/").status_code == 401


@pytest.mark.parametrize("query", [
    "open=null", "open=maybe", "started_before=", "format=",
])
def test_malformed_filters_and_format_are_400s(api, platform_user, query):
    response = api(platform_user).get(f"/api/v1/chargeback/intervals/?{query}")
    assert response.status_code == 400 and query.split("=")[0] in response.json()


@pytest.mark.parametrize("value", ["0496-08-18T14:57:19-20:55", "0001-01-01T00:00:00%2B10:00"])
def test_times_with_extreme_offsets_are_handled(api, platform_user, value):
    response = api(platform_user).get(f"/api/v1/chargeback/intervals/?active_after={value}")
    assert response.status_code in (200, 400)


# --- bodies, filters and ids that used to be 500s (red-team issue 16, item 6) ---------------------------------------

def _post_raw(client, path: str, text: str):
    return client.generic("POST", path, text, content_type="application/json")


def _with_raw_answer(key: str, raw_json: str) -> str:
    """A create body whose answer `key` is the given JSON text, verbatim (json.dumps could not write it)."""
    import json

    body = json.dumps({"team": "team-a", "name": "odd", "answers": {**VALID_ANSWERS, key: "RAW"}})
    return body.replace('"RAW"', raw_json)


def test_a_body_nested_100k_deep_is_a_400_not_a_recursion_error(api, engineer, team_a, inventory):
    response = _post_raw(api(engineer), "/api/v1/requests/", "[" * 100_000 + "]" * 100_000)
    assert response.status_code == 400 and "Nested too deeply" in response.json()["non_field_errors"][0]


def test_deeply_nested_answers_are_a_400_naming_answers(api, engineer, team_a, inventory):
    import json

    deep = '{"a":' * 3000 + "1" + "}" * 3000
    text = json.dumps({"team": "team-a", "name": "deep", "answers": "RAW"}).replace('"RAW"', deep)
    response = _post_raw(api(engineer), "/api/v1/requests/", text)
    assert response.status_code == 400 and "answers" in response.json()


@pytest.mark.parametrize("literal", ["1" + "0" * 400, "1e400", "-1e400", "9223372036854775808"])
def test_numbers_out_of_range_are_a_400_naming_the_answer(api, engineer, team_a, inventory, literal):
    from intake.models import GpuRequest

    response = _post_raw(api(engineer), "/api/v1/requests/", _with_raw_answer("gpu_memory_gb", literal))
    assert response.status_code == 400, response.content
    assert "gpu_memory_gb" in response.json()["answers"]
    assert GpuRequest.objects.count() == 0


@pytest.mark.parametrize("path", ["/api/v1/requests/", "/api/v1/intake/preview/"])
def test_a_lone_surrogate_in_the_command_is_a_400_naming_it(api, engineer, team_a, inventory, path):
    from intake.models import GpuRequest

    response = _post_raw(api(engineer), path, _with_raw_answer("command", '["python", "\\ud800"]'))
    assert response.status_code == 400 and "command" in response.json()["answers"]
    assert GpuRequest.objects.count() == 0


def test_a_lone_surrogate_in_a_key_is_a_400(api, engineer, team_a, inventory):
    response = _post_raw(api(engineer), "/api/v1/requests/", '{"team": "team-a", "\\udfff": 1}')
    assert response.status_code == 400 and "non_field_errors" in response.json()


def test_an_unknown_status_filter_is_a_400_on_the_api(api, engineer):
    response = api(engineer).get("/api/v1/requests/?status=bogus")
    assert response.status_code == 400 and "status" in response.json()


@pytest.mark.parametrize("query", ["status=bogus", "team=a%00b", "status=a%00", "workload_class=nope"])
def test_bad_filters_on_the_requests_page_are_a_400_naming_them(client, engineer, query):
    client.force_login(engineer)
    response = client.get(f"/requests/?{query}")
    assert response.status_code == 400
    assert f"<strong>{query.split('=')[0]}</strong>" in response.content.decode()


@pytest.mark.parametrize("month", ["9999-12", "0001-01"])
def test_closing_a_month_out_of_range_is_a_400_naming_the_month(api, finance_user, month):
    response = api(finance_user).post("/api/v1/chargeback/closed-periods/", {"month": month}, format="json")
    assert response.status_code == 400 and "month" in response.json()


def test_closing_a_month_out_of_range_in_the_admin_shows_the_error_on_the_field(client, finance_user):
    client.force_login(finance_user)
    response = client.post("/admin/chargeback/closedperiod/close/", {"month": "9999-12"})
    assert response.status_code == 200
    assert "Must be a month from" in str(response.context["form"].errors["month"])


@pytest.mark.parametrize("model", ["gpurequest", "pendingapproval", "policyversion"])
def test_a_malformed_object_id_in_the_admin_is_a_404(client, platform_user, model):
    client.force_login(platform_user)
    for object_id in ("abc", "1.5", "99999999999999999999"):
        response = client.get(f"/admin/intake/{model}/{object_id}/change/")
        assert response.status_code in (302, 404), (model, object_id, response.status_code)
    assert client.get("/admin/intake/gpurequest/abc/change/").status_code == 404


def test_path_ids_are_ascii_digits_only(api, engineer, platform_user, team_a, inventory):
    """`٣` is ARABIC-INDIC DIGIT THREE: int() reads it as 3, so it once approved request 3."""
    from django.urls import URLPattern, URLResolver, get_resolver

    gpu_request = request_submit(user=engineer, team=team_a, name="digits", raw_answers=VALID_ANSWERS)
    lookalike = "".join(chr(0x0660 + int(d)) for d in str(gpu_request.pk))
    client = api(platform_user)
    for path in (f"/api/v1/requests/{lookalike}/approve/", f"/api/v1/requests/{lookalike}/"):
        response = client.post(path, {}, format="json") if path.endswith("approve/") else client.get(path)
        assert response.status_code == 404, (path, response.status_code)
    assert client.get(f"/api/v1/requests/{gpu_request.pk}/").json()["status"] == "pending_approval"
    token = api(engineer).get("/api/v1/tokens/").json()["results"][0]["id"]
    assert api(engineer).delete(f"/api/v1/tokens/{''.join(chr(0x0660 + int(d)) for d in str(token))}/").status_code == 404
    assert api(engineer).get("/api/v1/me/").status_code == 200

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern))
            elif isinstance(pattern, URLPattern):
                yield prefix + str(pattern.pattern)

    # No API route takes a non-ASCII digit where an ASCII one would do.
    api_routes = [route for route in walk(get_resolver().url_patterns) if route.startswith("^api/")]
    assert api_routes and not [route for route in api_routes if "\\d" in route or "[^/.]" in route]


@pytest.mark.parametrize("path, body", [
    ("/api/v1/requests/{pk}/extend-lease/", {"hours": True}),
    ("/api/v1/intake/preview/", {"team": "team-a", "answers": {**VALID_ANSWERS, "gpu_memory_gb": True}}),
])
def test_a_boolean_is_not_a_number(api, engineer, team_a, inventory, path, body):
    gpu_request = request_submit(user=engineer, team=team_a, name="bools", raw_answers=VALID_ANSWERS)
    response = api(engineer).post(path.format(pk=gpu_request.pk), body, format="json")
    assert response.status_code == 400, response.json()


def test_an_empty_integer_in_a_query_is_a_400_not_the_default(api, platform_user):
    response = api(platform_user).get("/api/v1/register/?days=&format=md")
    assert response.status_code == 400 and "days" in response.json()
