"""The questionnaire, as data. One definition produces the web form, the API serializer and schema
(`GET /api/v1/intake/questionnaire/`), the JSON Schema of the answers, and the table in docs/questionnaire.md
(`python manage.py questionnaire_docs`). Change a question here and all of them follow.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .choices import DataSensitivity, Latency, Tenancy, WorkloadClass
from .image_reference import IMAGE_REFERENCE_RE

QUESTIONNAIRE_VERSION = 1


@dataclass(frozen=True)
class Option:
    value: str
    label: str
    help: str = ""


@dataclass(frozen=True)
class Question:
    key: str
    label: str
    help: str
    kind: str  # choice | integer | number | image | string_list
    required: bool = True
    default: Any = None
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    max_length: int | None = None
    max_items: int | None = None
    section: str = "workload"
    unit: str = ""

    def as_dict(self) -> dict:
        data = asdict(self)
        data["options"] = [asdict(o) for o in self.options]
        return data


def _options(choices, helps: dict[str, str]) -> tuple[Option, ...]:
    return tuple(Option(value=value, label=label, help=helps.get(value, "")) for value, label in choices.choices)


QUESTIONS: tuple[Question, ...] = (
    Question(
        key="workload_class",
        label="What kind of workload is this?",
        help="Training runs to completion, inference serves requests, development is an interactive notebook or shell.",
        kind="choice",
        options=_options(
            WorkloadClass,
            {
                "training": "A job that runs to completion; several replicas start together.",
                "inference": "A long-running service answering requests.",
                "development": "A notebook or shell for trying things out.",
            },
        ),
    ),
    Question(
        key="tenancy",
        label="Can it share GPUs or nodes with other teams?",
        help="Multi-tenant work may share hardware with other teams; dedicated work gets hardware of its own.",
        kind="choice",
        options=_options(Tenancy, {"multi_tenant": "May share with other teams.", "dedicated": "Needs its own GPUs."}),
    ),
    Question(
        key="latency",
        label="Is it latency-sensitive?",
        help="Latency-sensitive work must not be slowed by neighbours; batch work cares about throughput.",
        kind="choice",
        options=_options(
            Latency, {"latency_sensitive": "Users wait for its answers.", "batch": "Nobody waits on a single step."}
        ),
    ),
    Question(
        key="data_sensitivity",
        label="How sensitive is the data it touches?",
        help="Regulated data (personal, health, financial, export-controlled) is never time-sliced.",
        kind="choice",
        required=False,
        default=DataSensitivity.STANDARD.value,
        options=_options(
            DataSensitivity,
            {"standard": "Ordinary internal data.", "regulated": "Data under a legal or contractual regime."},
        ),
    ),
    Question(
        key="gpu_memory_gb",
        label="GPU memory needed per replica",
        help="The GPU memory one replica needs, across all its GPUs, in GB.",
        kind="number",
        minimum=0,
        exclusive_minimum=True,
        maximum=2048,
        section="size",
        unit="GB",
    ),
    Question(
        key="gpus_per_replica",
        label="GPUs per replica",
        help="How many GPUs (or GPU slices) one replica uses; a replica's GPUs are always on one node.",
        kind="integer",
        required=False,
        default=1,
        minimum=1,
        maximum=16,
        section="size",
    ),
    Question(
        key="replicas",
        label="Replicas",
        help="How many copies run at once. Multi-replica training starts all-or-nothing (gang scheduling).",
        kind="integer",
        required=False,
        default=1,
        minimum=1,
        maximum=256,
        section="size",
    ),
    Question(
        key="min_driver_major",
        label="Minimum NVIDIA driver (major version)",
        help="Only if your image needs a newer driver, e.g. 570 for CUDA 12.8.",
        kind="integer",
        required=False,
        minimum=400,
        maximum=999,
        section="runtime",
    ),
    Question(
        key="image",
        label="Container image",
        help="A full image reference, e.g. nvcr.io/nvidia/pytorch:25.01-py3.",
        kind="image",
        max_length=512,
        section="runtime",
    ),
    Question(
        key="command",
        label="Command",
        help="The command and its arguments, one item per argument; empty for the image's default.",
        kind="string_list",
        required=False,
        max_items=64,
        max_length=4096,
        section="runtime",
    ),
    Question(
        key="expected_hours",
        label="Expected run time",
        help="How long you expect it to run, in hours; used to project GPU-hours and cost.",
        kind="number",
        required=False,
        minimum=0,
        exclusive_minimum=True,
        maximum=8760,
        section="runtime",
        unit="hours",
    ),
    Question(
        key="lease_hours",
        label="Lease",
        help="How long the grant lasts, in hours, before the portal takes it down; empty for the policy's default "
             "for this workload class. You can extend it later, up to the policy's maximum.",
        kind="number",
        required=False,
        minimum=0,
        exclusive_minimum=True,
        maximum=8760,
        section="runtime",
        unit="hours",
    ),
)

QUESTIONS_BY_KEY: dict[str, Question] = {q.key: q for q in QUESTIONS}
ANSWER_KEYS: tuple[str, ...] = tuple(QUESTIONS_BY_KEY)
# The answers a routing rule may match on (the ones with a fixed set of values).
MATCHABLE_KEYS: tuple[str, ...] = tuple(q.key for q in QUESTIONS if q.kind == "choice")


def json_schema() -> dict:
    """JSON Schema (draft 2020-12) of the answers object."""
    properties: dict[str, dict] = {}
    for q in QUESTIONS:
        prop: dict[str, Any] = {"title": q.label, "description": q.help}
        if q.kind == "choice":
            prop.update(type="string", enum=[o.value for o in q.options])
        elif q.kind == "integer":
            prop.update(type="integer", minimum=q.minimum, maximum=q.maximum)
        elif q.kind == "number":
            prop["type"] = "number"
            prop["exclusiveMinimum" if q.exclusive_minimum else "minimum"] = q.minimum
            prop["maximum"] = q.maximum
        elif q.kind == "image":
            prop.update(type="string", maxLength=q.max_length, pattern=IMAGE_REFERENCE_RE.pattern)
        elif q.kind == "string_list":
            prop.update(type="array", maxItems=q.max_items, items={"type": "string", "maxLength": q.max_length})
        if q.default is not None:
            prop["default"] = q.default
        properties[q.key] = {k: v for k, v in prop.items() if v is not None}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
        "required": [q.key for q in QUESTIONS if q.required],
        "additionalProperties": False,
    }


def openapi_schema() -> dict:
    """The answers object for the OpenAPI 3.0 document: the JSON Schema above in 3.0's dialect (boolean
    exclusiveMinimum, `nullable` for answers that may be left out)."""
    schema = json_schema()
    del schema["$schema"]
    for key, prop in schema["properties"].items():
        if "exclusiveMinimum" in prop:
            prop["minimum"], prop["exclusiveMinimum"] = prop["exclusiveMinimum"], True
        if not QUESTIONS_BY_KEY[key].required:
            prop["nullable"] = True
    return schema


def questionnaire_definition() -> dict:
    return {
        "version": QUESTIONNAIRE_VERSION,
        "questions": [q.as_dict() for q in QUESTIONS],
        "json_schema": json_schema(),
    }


def markdown_table() -> str:
    """The questionnaire as a Markdown table, for docs/questionnaire.md."""
    lines = ["| answer | question | type | required / default | allowed |", "|---|---|---|---|---|"]
    for q in QUESTIONS:
        if q.kind == "choice":
            allowed = ", ".join(f"`{o.value}`" for o in q.options)
        elif q.kind in {"integer", "number"}:
            low = f"> {q.minimum:g}" if q.exclusive_minimum else f">= {q.minimum:g}"
            allowed = f"{low}, <= {q.maximum:g}" + (f" {q.unit}" if q.unit else "")
        elif q.kind == "image":
            allowed = f"OCI image reference, <= {q.max_length} chars"
        else:
            allowed = f"<= {q.max_items} strings of <= {q.max_length} chars"
        need = "required" if q.required else (f"default `{q.default}`" if q.default is not None else "optional")
        lines.append(f"| `{q.key}` | {q.label} | {q.kind} | {need} | {allowed} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class NormalisedAnswers:
    """Answers with defaults filled in, and which keys took their default."""

    values: dict[str, Any]
    defaulted: frozenset[str] = field(default_factory=frozenset)
