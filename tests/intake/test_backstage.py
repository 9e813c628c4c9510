"""Backstage: the software template generated from the questionnaire (and its step's body accepted by the real
API), and the catalog export of requests as `Resource` entities."""
from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from intake.backstage import entity_name
from intake.decisions import Decision
from intake.management.commands.backstage_template import DEFAULT_OUTPUT, DEFAULT_PORTAL_URL, render_template
from intake.questionnaire import QUESTIONS, questionnaire_definition
from workflows.services import request_cancel, request_submit
from tests.conftest import VALID_ANSWERS

ROOT = Path(__file__).resolve().parents[2]
# Backstage's rules (catalog-model): object names, tags, label values.
NAME_RE = re.compile(r"^[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$")
TAG_RE = re.compile(r"^[a-z0-9:+#]+(-[a-z0-9:+#]+)*$")


def generated() -> str:
    return render_template(questionnaire_definition(), portal_url=DEFAULT_PORTAL_URL,
                           proxy_path="/proxy/gpu-portal", owner="group:default/platform")


@pytest.fixture
def template() -> dict:
    return yaml.safe_load(DEFAULT_OUTPUT.read_text())


# --- the template -----------------------------------------------------------------------------------------------


def test_committed_template_is_the_generated_one():
    assert DEFAULT_OUTPUT == ROOT / "backstage" / "template.yaml"
    assert DEFAULT_OUTPUT.read_text() == generated(), "run: python manage.py backstage_template"
    call_command("backstage_template", "--check", stdout=io.StringIO())


def test_check_fails_when_the_template_is_stale(tmp_path):
    stale = tmp_path / "template.yaml"
    stale.write_text("old")
    with pytest.raises(CommandError, match="not up to date"):
        call_command("backstage_template", "--check", "--output", str(stale), stdout=io.StringIO())


def test_the_form_asks_every_question_of_the_questionnaire(template):
    assert template["apiVersion"] == "scaffolder.backstage.io/v1beta3" and template["kind"] == "Template"
    pages = template["spec"]["parameters"]
    properties = {key: prop for page in pages for key, prop in page["properties"].items()}
    assert list(properties) == ["team", "name", *[q.key for q in QUESTIONS]]
    required = {key for page in pages for key in page["required"]}
    assert required == {"team", "name", *[q.key for q in QUESTIONS if q.required]}
    schema = questionnaire_definition()["json_schema"]["properties"]
    for question in QUESTIONS:
        prop = properties[question.key]
        assert {k: v for k, v in prop.items() if not k.startswith("ui:") and k != "enumNames"} == schema[question.key]
    assert properties["workload_class"]["enumNames"] == ["Training", "Inference", "Development"]
    assert properties["team"]["ui:field"] == "OwnerPicker"


def test_the_step_posts_every_answer_to_the_requests_endpoint(template):
    [step] = template["spec"]["steps"]
    assert step["action"] == "http:backstage:request"
    assert (step["input"]["method"], step["input"]["path"]) == ("POST", "/proxy/gpu-portal/api/v1/requests/")
    assert set(step["input"]["body"]["answers"]) == {q.key for q in QUESTIONS}


def scaffold(value, parameters: dict):
    """What Backstage's workflow runner does with a step input: a value that is one `${{ }}` expression keeps
    its type, an undefined one is dropped. Supports the expressions the template uses."""
    if isinstance(value, dict):
        rendered = {k: scaffold(v, parameters) for k, v in value.items()}
        return {k: v for k, v in rendered.items() if v is not None}
    match = re.fullmatch(r"\$\{\{ parameters\.(\w+)( \| parseEntityRef \| pick\('name'\))? \}\}", value)
    assert match, f"unexpected expression {value!r}"
    result = parameters.get(match.group(1))
    if result is not None and match.group(2):
        result = result.rsplit("/", 1)[-1]  # group:default/team-a -> team-a
    return result


@pytest.mark.django_db
def test_what_the_template_sends_is_accepted_by_the_api(template, api, platform_user, team_a, inventory):
    # The form's answers as Backstage holds them: numbers as numbers, optional ones left empty.
    parameters = {"team": "group:default/team-a", "name": "from-backstage", "workload_class": "inference",
                  "tenancy": "multi_tenant", "latency": "latency_sensitive", "data_sensitivity": "standard",
                  "gpu_memory_gb": 16, "gpus_per_replica": 1, "replicas": 2,
                  "image": "nvcr.io/nvidia/tritonserver:25.01-py3", "command": ["tritonserver", "--model-store=/m"]}
    [step] = template["spec"]["steps"]
    body = scaffold(step["input"]["body"], parameters)
    assert "min_driver_major" not in body["answers"] and body["answers"]["replicas"] == 2

    # The Backstage proxy forwards the body with the portal token it holds (a platform service account).
    response = api(platform_user).post("/api/v1/requests/", body, format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert (created["team"], created["name"], created["answers"]["replicas"]) == ("team-a", "from-backstage", 2)
    assert Decision.from_json(created["decision"]).summary  # the template's output shows it
    link = template["spec"]["output"]["links"][0]["url"].replace(
        "${{ steps['request'].output.body.id }}", str(created["id"]))
    assert link == f"{DEFAULT_PORTAL_URL}/requests/{created['id']}/"


@pytest.mark.django_db(transaction=True, serialized_rollback=True)
def test_the_template_can_be_generated_from_a_running_portals_questionnaire_endpoint(live_server, tmp_path,
                                                                                      engineer):
    output = tmp_path / "template.yaml"
    call_command("backstage_template", "--from-url", f"{live_server.url}/api/v1/intake/questionnaire/",
                 "--token", engineer.api_token, "--output", str(output), stdout=io.StringIO())
    assert output.read_text() == generated()
    with pytest.raises(CommandError, match="401"):
        call_command("backstage_template", "--from-url", f"{live_server.url}/api/v1/intake/questionnaire/",
                     "--output", str(output), stdout=io.StringIO())


# --- the catalog export -----------------------------------------------------------------------------------------


def test_entity_names_are_unique_valid_and_at_most_63_characters():
    long = entity_name(team="a" * 40, name="b" * 63, request_id=123456)
    assert len(long) == 63 and long.endswith("-123456") and NAME_RE.fullmatch(long)
    assert entity_name(team="vision", name="chat", request_id=7) == "vision-chat-7"
    assert entity_name(team="x", name="a" * 50 + "-" + "b" * 20, request_id=1)[-3:] != "--1"


@pytest.fixture
def catalog(engineer, engineer_b, team_a, team_b, inventory):
    live = request_submit(user=engineer, team=team_a, name="serve", raw_answers=VALID_ANSWERS)
    other = request_submit(user=engineer_b, team=team_b, name="serve", raw_answers=VALID_ANSWERS)
    gone = request_submit(user=engineer, team=team_a, name="old", raw_answers=VALID_ANSWERS)
    request_cancel(user=engineer, request_id=gone.pk)
    return {"live": live, "other": other, "gone": gone}


@pytest.mark.django_db
def test_engineers_see_their_teams_live_requests_as_resources_owned_by_the_team(api, engineer, catalog):
    response = api(engineer).get("/api/v1/backstage/entities/")
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    [entity] = response.json()
    live = catalog["live"]
    assert entity["apiVersion"] == "backstage.io/v1alpha1" and entity["kind"] == "Resource"
    assert entity["spec"] == {"type": "gpu-allocation", "owner": "group:default/team-a"}
    metadata = entity["metadata"]
    assert metadata["name"] == f"team-a-serve-{live.pk}" and metadata["namespace"] == "default"
    assert metadata["title"] == "team-a/serve" and metadata["description"] == live.decision.summary
    url = f"http://testserver/requests/{live.pk}/"
    assert metadata["links"] == [{"url": url, "title": "GPU request in the portal", "icon": "dashboard"}]
    assert metadata["annotations"]["gpu-portal.io/url"] == url
    assert metadata["annotations"]["gpu-portal.io/rule"] == "inference-shared-latency"
    assert metadata["labels"] == {"gpu-portal.io/status": "pending_approval", "gpu-portal.io/strategy": "mig",
                                  "gpu-portal.io/workload-class": "inference"}
    assert all(TAG_RE.fullmatch(tag) for tag in metadata["tags"])
    assert all(NAME_RE.fullmatch(value) and len(value) <= 63 for value in metadata["labels"].values())


@pytest.mark.django_db
def test_a_finance_or_platform_token_exports_every_team_as_yaml_documents(api, finance_user, catalog, settings):
    settings.PORTAL_BASE_URL = "https://gpu-portal.example.com"
    settings.BACKSTAGE_NAMESPACE = "gpu"
    settings.BACKSTAGE_SYSTEM = "gpu-platform"
    with CaptureQueriesContext(connection) as queries:
        response = api(finance_user).get("/api/v1/backstage/entities/?format=yaml")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/yaml")
    documents = list(yaml.safe_load_all(response.content))
    assert sorted(d["spec"]["owner"] for d in documents) == ["group:default/team-a", "group:default/team-b"]
    assert len({d["metadata"]["name"] for d in documents}) == 2
    assert all(d["metadata"]["namespace"] == "gpu" and d["spec"]["system"] == "gpu-platform" for d in documents)
    assert documents[0]["metadata"]["links"][0]["url"].startswith("https://gpu-portal.example.com/requests/")
    assert len(queries) <= 6  # user, roles, the requests with team/requester/policy joined


@pytest.mark.django_db
def test_terminal_requests_leave_the_catalog_unless_asked_for(api, engineer, catalog):
    names = lambda r: [e["metadata"]["title"] for e in r.json()]  # noqa: E731
    assert names(api(engineer).get("/api/v1/backstage/entities/")) == ["team-a/serve"]
    assert names(api(engineer).get("/api/v1/backstage/entities/?status=cancelled")) == ["team-a/old"]


@pytest.mark.django_db
def test_the_catalog_export_needs_authentication(api):
    assert api().get("/api/v1/backstage/entities/").status_code == 401
