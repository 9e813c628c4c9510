"""Backstage integration, as data: requests as catalog entities, and the software template whose form is the
questionnaire and whose step calls the portal's REST API.

Pure functions over plain values; the API view (`workflows.api.backstage`) and the `backstage_template` command
feed them.
"""
from __future__ import annotations

import re
from typing import Any

from .decisions import Decision

ENTITY_API_VERSION = "backstage.io/v1alpha1"
TEMPLATE_API_VERSION = "scaffolder.backstage.io/v1beta3"
ENTITY_TYPE = "gpu-allocation"
LABEL_DOMAIN = "gpu-portal.io"
NAME_MAX = 63
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
STEP_ID = "request"

SECTION_TITLES = {
    "workload": "The workload",
    "size": "How big",
    "runtime": "What runs",
}


def _backstage_name(text: str) -> str:
    """Backstage object names: [A-Za-z0-9] at both ends, [-_.A-Za-z0-9] inside, at most 63 characters."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", text)


def _tag(text: str) -> str:
    return re.sub(r"[^a-z0-9:+#]+", "-", text.lower()).strip("-")[:NAME_MAX]


def entity_name(*, team: str, name: str, request_id: int) -> str:
    """Unique (the request id) and readable (team and name), truncated to Backstage's 63 characters."""
    suffix = f"-{request_id}"
    base = _backstage_name(f"{team}-{name}")[: NAME_MAX - len(suffix)].rstrip("-_.")
    return f"{base}{suffix}"


def request_entity(
    *,
    request_id: int,
    team: str,
    name: str,
    status: str,
    strategy: str,
    workload_class: str,
    decision: Decision,
    policy_version: int,
    rule_key: str,
    requested_by: str,
    url: str,
    namespace: str = "default",
    group_namespace: str = "default",
    system: str = "",
) -> dict:
    """One GPU request as a catalog `Resource` owned by its team's group."""
    annotations = {
        f"{LABEL_DOMAIN}/request-id": str(request_id),
        f"{LABEL_DOMAIN}/url": url,
        f"{LABEL_DOMAIN}/policy-version": str(policy_version),
        f"{LABEL_DOMAIN}/rule": rule_key or "platform default",
        f"{LABEL_DOMAIN}/requested-by": requested_by,
        f"{LABEL_DOMAIN}/cluster": decision.cluster,
        f"{LABEL_DOMAIN}/node-pool": decision.node_pool,
        f"{LABEL_DOMAIN}/gpu-equivalents": str(decision.gpu_equivalents),
    }
    spec: dict[str, Any] = {"type": ENTITY_TYPE, "owner": f"group:{group_namespace}/{team}"}
    if system:
        spec["system"] = system
    return {
        "apiVersion": ENTITY_API_VERSION,
        "kind": "Resource",
        "metadata": {
            "name": entity_name(team=team, name=name, request_id=request_id),
            "namespace": namespace,
            "title": f"{team}/{name}",
            "description": decision.summary,
            "labels": {
                f"{LABEL_DOMAIN}/status": status,
                f"{LABEL_DOMAIN}/strategy": strategy,
                f"{LABEL_DOMAIN}/workload-class": workload_class,
            },
            "annotations": annotations,
            "tags": sorted({"gpu", _tag(strategy), _tag(workload_class)}),
            "links": [{"url": url, "title": "GPU request in the portal", "icon": "dashboard"}],
        },
        "spec": spec,
    }


# --- the software template ----------------------------------------------------------------------------------------


def _property(question: dict, schema: dict) -> dict:
    prop = dict(schema)
    if question["kind"] == "choice":
        prop["enumNames"] = [option["label"] for option in question["options"]]
        prop["ui:widget"] = "radio" if len(question["options"]) <= 3 else "select"
    if question["kind"] == "string_list":
        prop["ui:options"] = {"orderable": True}
    if question.get("unit"):
        prop["ui:help"] = f"In {question['unit']}."
    return prop


def template_from_questionnaire(
    definition: dict, *, portal_url: str, proxy_path: str = "/proxy/gpu-portal", owner: str = "group:default/platform"
) -> dict:
    """The scaffolder template for a questionnaire definition (what `GET /api/v1/intake/questionnaire/`
    returns): one form page per questionnaire section, and one step POSTing the answers to `/api/v1/requests/`
    through the Backstage proxy (which adds the portal token)."""
    schema = definition["json_schema"]
    required = set(schema["required"])
    pages: dict[str, dict] = {}
    for question in definition["questions"]:
        page = pages.setdefault(question["section"], {
            "title": SECTION_TITLES.get(question["section"], question["section"].title()),
            "required": [],
            "properties": {},
        })
        page["properties"][question["key"]] = _property(question, schema["properties"][question["key"]])
        if question["key"] in required:
            page["required"].append(question["key"])
    first_page = {
        "title": "Team and name",
        "required": ["team", "name"],
        "properties": {
            "team": {
                "title": "Team",
                "type": "string",
                "description": "The team the GPUs are for; its group in the catalog owns the request.",
                "ui:field": "OwnerPicker",
                "ui:options": {"catalogFilter": {"kind": "Group"}},
            },
            "name": {
                "title": "Name",
                "type": "string",
                "description": "A short name, unique among the team's live requests (lower-case, digits, '-').",
                "pattern": DNS_LABEL_PATTERN,
                "maxLength": NAME_MAX,
            },
        },
    }
    answers = {question["key"]: f"${{{{ parameters.{question['key']} }}}}" for question in definition["questions"]}
    portal_url = portal_url.rstrip("/")
    return {
        "apiVersion": TEMPLATE_API_VERSION,
        "kind": "Template",
        "metadata": {
            "name": "gpu-portal-request",
            "title": "Request GPU capacity",
            "description": "Describe a GPU workload; the GPU Golden Path Portal decides how it is placed, shows why, "
                           "and routes it to approval.",
            "tags": ["gpu", "kubernetes"],
            "annotations": {
                f"{LABEL_DOMAIN}/questionnaire-version": str(definition["version"]),
                f"{LABEL_DOMAIN}/generated-by": "python manage.py backstage_template",
            },
            "links": [{"url": portal_url + "/", "title": "GPU Golden Path Portal"}],
        },
        "spec": {
            "owner": owner,
            "type": ENTITY_TYPE,
            "parameters": [first_page, *pages.values()],
            "steps": [{
                "id": STEP_ID,
                "name": "Submit the request to the GPU portal",
                "action": "http:backstage:request",
                "input": {
                    "method": "POST",
                    "path": f"{proxy_path.rstrip('/')}/api/v1/requests/",
                    "headers": {"content-type": "application/json"},
                    # Whole-value expressions keep their types (numbers, lists); unanswered ones are left out.
                    "body": {
                        "team": "${{ parameters.team | parseEntityRef | pick('name') }}",
                        "name": "${{ parameters.name }}",
                        "answers": answers,
                    },
                },
            }],
            "output": {
                "links": [{
                    "title": "Open the request in the portal",
                    "url": f"{portal_url}/requests/${{{{ steps['{STEP_ID}'].output.body.id }}}}/",
                }],
                "text": [{
                    "title": "What you get",
                    "content": f"${{{{ steps['{STEP_ID}'].output.body.decision.summary }}}}",
                }],
            },
        },
    }
