"""OpenAPI post-processing: every operation documents the error answers the one exception handler gives, so
clients (and the schema fuzzer) know a 400 names fields and the other errors carry `detail` and `code`."""

ERROR = {
    "type": "object",
    "properties": {"detail": {"type": "string"}, "code": {"type": "string"}},
    "required": ["detail"],
}
VALIDATION_ERROR = {
    "type": "object",
    "description": "Field name -> list of messages; nested objects (e.g. `answers`) nest the same way.",
    "additionalProperties": {},
}
ERRORS = {
    "400": ("Bad input: the offending fields are named", "ValidationError"),
    "401": ("Not authenticated", "Error"),
    "403": ("Not allowed for your role", "Error"),
    "404": ("Not found, or not visible to you", "Error"),
    "429": ("Too many requests; retry after the Retry-After header", "Error"),
}
STATE_CHANGE_ERRORS = {"409": ("Not allowed from the current state", "Error")}


def add_error_responses(result, generator, request, public):
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components.setdefault("Error", ERROR)
    components.setdefault("ValidationError", VALIDATION_ERROR)
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            errors = dict(ERRORS)
            if method != "get":
                errors.update(STATE_CHANGE_ERRORS)
            responses = operation.setdefault("responses", {})
            for status, (description, component) in errors.items():
                responses.setdefault(status, {
                    "description": description,
                    "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{component}"}}},
                })
    return result


# One tag per area of the API, in the order a reader meets them. An operation's tag is the first segment of its path
# after /api/v1/; a path in an area not named here fails the OpenAPI lint (operation-tag-defined).
TAGS = [
    {"name": "me", "description": "Who the token or session belongs to"},
    {"name": "tokens", "description": "Your API tokens: issue, list, revoke"},
    {"name": "intake", "description": "The questionnaire and the preview: what you would get, and why"},
    {"name": "requests", "description": "GPU requests: submit, follow, approve, reject, cancel"},
    {"name": "policy", "description": "The routing policy: versions, their review and sign-off"},
    {"name": "clusters", "description": "Clusters, node pools and discovered inventory"},
    {"name": "teams", "description": "A team's notification webhook and its signing secret"},
    {"name": "chargeback", "description": "Metered GPU usage, rate cards, reports and closed months"},
    {"name": "register", "description": "The platform decision register"},
    {"name": "backstage", "description": "Requests as Backstage catalog entities"},
    {"name": "ops", "description": "Operations checks: the worker ping"},
]


def describe_document(result, generator, request, public):
    """Tags every operation with its area, declares the tags, and gives every nullable reference to a component the
    component's type.

    drf-spectacular writes a nullable nested serializer as `{allOf: [{$ref}], nullable: true}`; OpenAPI 3.0 only
    honours `nullable` beside a `type`, so without it validators and client generators drop the null."""
    result["tags"] = TAGS
    for path, operations in result.get("paths", {}).items():
        area = path.removeprefix("/api/v1/").split("/", 1)[0]
        for method, operation in operations.items():
            if method in {"get", "post", "put", "patch", "delete"}:
                operation["tags"] = [area]
    components = result.get("components", {}).get("schemas", {})

    def visit(node):
        if isinstance(node, dict):
            refs = node.get("allOf") or []
            if node.get("nullable") and "type" not in node and len(refs) == 1 and "$ref" in refs[0]:
                target = components.get(refs[0]["$ref"].rsplit("/", 1)[-1], {})
                if "type" in target:
                    node["type"] = target["type"]
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(result)
    return result
