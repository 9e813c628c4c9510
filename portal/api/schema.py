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
