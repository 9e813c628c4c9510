"""The register as Markdown or JSON, from `register_build()`'s dict. Formatting only: no queries here."""
from __future__ import annotations

import datetime
from typing import Any
from .api.serializers import RegisterSerializer

MAX_CHANGES_SHOWN = 6
VERDICT_LEGEND = (
    "*decided*: an owner signed it off and it still matches what is configured and running; *inherited*: nobody "
    "chose it, it is whatever the default or the cluster happened to be; *conflict*: a sign-off, the configuration "
    "or the nodes disagree."
)
TABLE_HEADER = "| verdict | subject | state | owner | signed off | evidence |"


def _cell(value: Any) -> str:
    text = "—" if value in (None, "") else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _when(value) -> str:
    if isinstance(value, str):
        value = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if isinstance(value, datetime.date):
        return value.isoformat()
    return ""


def _day(value) -> str:
    return _when(value)[:10]


def _signed(item: dict) -> str:
    if not item.get("signed_off_at"):
        return "—"
    return f"{item.get('signed_off_by') or '?'}, {_day(item['signed_off_at'])}"


def _drafts(summary: dict) -> list[str]:
    lines = []
    version = summary.get("policy_version")
    if version:
        review = version.get("review")
        signed = f"signed off by {version['signed_off_by']} on {_day(version['signed_off_at'])}" \
            if version.get("signed_off_at") else "never signed off"
        line = f"- In force: policy v{version['number']}, {signed}"
        if review:
            line += (f"; reviewed diff: {review.get('changed_count', 0)} of {review.get('evaluated', 0)} requests "
                     f"of {review.get('days')} days changed")
        lines.append(line + f" ([admin]({version['links']['admin']}), [API]({version['links']['api']})).")
    drafts = summary.get("drafts_awaiting_review") or []
    if not drafts:
        lines.append("- Drafts awaiting review: none.")
    for draft in drafts:
        classes = ", ".join(f"{c}: {n['changed']} of {n['evaluated']}" for c, n in draft["by_workload_class"].items())
        rules = ", ".join(f"{r['rule']} ({r['change']})" for r in draft["rules_changed"]) or "none"
        lines.append(f"- Draft v{draft['number']} awaits review"
                     + (f" ({draft['notes']})" if draft.get("notes") else "")
                     + f": {draft['changed_count']} of {draft['evaluated']} requests of the last {draft['days']} days "
                     f"would change ({classes or 'none'}); rules changed: {rules} "
                     f"([review and sign off]({draft['links']['review']}), [diff]({draft['links']['diff']})).")
    return lines


def _change_text(change: dict) -> str:
    return f"`{change['path']}` {change['change']}"


def _diff_parts(row: dict) -> list[str]:
    parts = []
    if row["added"]:
        parts.append("adds " + ", ".join(f"`{key}`" for key in row["added"]))
    if row["removed"]:
        parts.append("removes " + ", ".join(f"`{key}`" for key in row["removed"]))
    for changed in row["changed"]:
        shown = [_change_text(c) for c in changed["changes"][:MAX_CHANGES_SHOWN]]
        more = len(changed["changes"]) - len(shown)
        parts.append(f"changes `{changed['object']}`: " + ", ".join(shown) + (f" and {more} more" if more > 0 else ""))
    validation = row.get("validation") or {}
    if validation.get("valid"):
        parts.append(f"the {validation['objects']} DRA object(s) validate")
    else:
        parts.append("does not validate: " + "; ".join(validation.get("problems") or ["?"]))
    return parts


def _previews(section: dict) -> list[str]:
    lines = []
    for item in section["items"]:
        preview = (item.get("evidence") or {}).get("migration_preview")
        if not preview or not preview["requests"]:
            continue
        lines.append(f"**{item['subject']}** (Kubernetes {preview['kubernetes_version']}):")
        for row in preview["requests"]:
            head = f"- #{row['request_id']} {row['team']}/{row['name']} ({row['status']}, {row['strategy']}): "
            lines.append(head + (f"cannot be rendered: {row['error']}" if row.get("error")
                                 else "; ".join(_diff_parts(row)) + "."))
        for row in preview.get("teams") or []:
            head = f"- namespace objects of team {row['team']}: "
            lines.append(head + (f"cannot be rendered: {row['error']}" if row.get("error")
                                 else "; ".join(_diff_parts(row)) + "."))
    return lines


def register_markdown(register: dict) -> str:
    """The register as a Markdown document (docs/register.md shows one from the demo data)."""
    counts = register["counts"]
    window = register["window"]
    policy = register.get("policy_version")
    lines = [
        "# Platform decision register",
        "",
        f"Generated {_when(register['generated_at'])} from "
        + (f"the policy in force (v{policy})" if policy else "no policy in force")
        + f", the inventory and the running workloads; window: the last {window['days']} days "
        f"({_day(window['start'])} to {_day(window['end'])}).",
        "",
        f"**{counts['decided']} decided, {counts['inherited']} inherited, {counts['conflict']} conflict.** "
        + VERDICT_LEGEND,
    ]
    for number, section in enumerate(register["sections"], start=1):
        lines += ["", f"## {number}. {section['title']}", ""]
        if section["area"] == "sharing_strategy":
            lines += _drafts(section.get("summary") or {})
        lines += [f"- {note}" for note in section.get("notes") or []]
        if lines[-1] != "":
            lines.append("")
        lines += [TABLE_HEADER, "|---|---|---|---|---|---|"]
        for item in section["items"]:
            verdict = f"**{item['verdict']}**" if item["verdict"] == "conflict" else item["verdict"]
            lines.append("| " + " | ".join(_cell(v) for v in (
                verdict, item["subject"], item["state"], item.get("owner"), _signed(item),
                " ".join(item.get("notes") or []))) + " |")
        if section["area"] == "scheduling_model":
            previews = _previews(section)
            if previews:
                lines += ["", "### Migration to DRA: what would change for the live requests", ""] + previews
    return "\n".join(lines) + "\n"


def register_json(register: dict) -> str:
    """The register as JSON, in the shape `GET /api/v1/register/` answers (indented)."""
    from rest_framework.renderers import JSONRenderer

    data = RegisterSerializer(register).data
    return JSONRenderer().render(data, renderer_context={"indent": 2}).decode() + "\n"
