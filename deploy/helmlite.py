"""Render the portal's Helm chart without `helm`, for tests and for reading the manifests on a machine without it.

It implements the small subset of Helm's Go templates the chart uses, and refuses anything else, so the chart
cannot drift into syntax this renderer would get wrong:

- text with actions `{{ ... }}`, whitespace trimming `{{- ` and ` -}}`, comments `{{/* ... */}}`;
- values: `.Values.<path>` (a missing key is an error, not an empty string), `.Release.Name`,
  `.Release.Namespace`, `.Release.Service`, `.Release.Revision`, `.Chart.Name`, `.Chart.Version`,
  `.Chart.AppVersion`, string and integer literals;
- pipelines `a | f x` and calls `f x a` of: `quote`, `toYaml`, `indent N`, `nindent N`, `default D`, `required MSG`;
- `if` / `else` / `end` on a pipeline (Go truthiness: false, 0, "", empty list or map, missing are false).

`helm template deploy/helm/gpu-portal` gives the same manifests where helm is installed (same syntax, same values).

    python -m deploy.helmlite deploy/helm/gpu-portal [--set ingress.enabled=true] [-f my-values.yaml]
"""
from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ACTION_RE = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
TOKEN_RE = re.compile(r'\s*(?:("(?:[^"\\]|\\.)*")|(-?\d+)|(\.[A-Za-z0-9_.]*)|([A-Za-z][A-Za-z0-9_]*)|(\|))')


class TemplateError(Exception):
    pass


# --- parsing ------------------------------------------------------------------------------------------------------


@dataclass
class Text:
    text: str


@dataclass
class Action:
    pipeline: str


@dataclass
class If:
    pipeline: str
    then: list = field(default_factory=list)
    otherwise: list = field(default_factory=list)


def _tokens(source: str) -> list:
    """Split into text and actions, applying the trim markers."""
    items: list = []
    position = 0
    for match in ACTION_RE.finditer(source):
        text = source[position:match.start()]
        if match.group(1):
            text = text.rstrip()
        items.append(Text(text))
        body = match.group(2).strip()
        items.append(("action", body, bool(match.group(3))))
        position = match.end()
    items.append(Text(source[position:]))
    # Right trim: the text after a ` -}}` loses its leading whitespace.
    for index, item in enumerate(items):
        if isinstance(item, tuple) and item[2] and isinstance(items[index + 1], Text):
            items[index + 1] = Text(items[index + 1].text.lstrip())
    return items


def parse(source: str) -> list:
    root: list = []
    stack: list[tuple[list, If | None]] = [(root, None)]
    for item in _tokens(source):
        body, node = stack[-1]
        if isinstance(item, Text):
            if item.text:
                body.append(item)
            continue
        _, action, _ = item
        if action.startswith("/*"):
            if not action.endswith("*/"):
                raise TemplateError(f"unterminated comment: {action[:30]}")
            continue
        keyword = action.split(None, 1)[0] if action else ""
        if keyword == "if":
            new = If(action[2:].strip())
            body.append(new)
            stack.append((new.then, new))
        elif keyword == "else":
            if node is None or action != "else" or body is node.otherwise:
                raise TemplateError(f"unsupported or misplaced {{{{ {action} }}}}")
            stack[-1] = (node.otherwise, node)
        elif keyword == "end":
            if node is None:
                raise TemplateError("{{ end }} without {{ if }}")
            stack.pop()
        elif keyword in {"range", "with", "define", "template", "include", "block", "tpl", "$"} or ":=" in action:
            raise TemplateError(f"unsupported template syntax: {{{{ {action} }}}}")
        else:
            body.append(Action(action))
    if len(stack) != 1:
        raise TemplateError("{{ if }} without {{ end }}")
    return root


# --- evaluation ---------------------------------------------------------------------------------------------------


def _truthy(value: Any) -> bool:
    return value not in (None, False, 0, "") and value != [] and value != {}


def _to_yaml(value: Any) -> str:
    if value is None:
        return "null"
    return yaml.safe_dump(value, default_flow_style=False, sort_keys=True).rstrip("\n").removesuffix("\n...")


def _indent(width: int, text: Any) -> str:
    pad = " " * int(width)
    return "\n".join(pad + line if line else line for line in str(text).split("\n"))


def _quote(value: Any) -> str:
    if value is None:
        return '""'
    return json.dumps(_print(value))


def _default(default: Any, value: Any = None) -> Any:
    return value if _truthy(value) else default


def _required(message: str, value: Any = None) -> Any:
    if value is None or value == "":
        raise TemplateError(message)
    return value


FUNCTIONS = {
    "quote": _quote,
    "toYaml": _to_yaml,
    "indent": _indent,
    "nindent": lambda width, text: "\n" + _indent(width, text),
    "default": _default,
    "required": _required,
}


def _print(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        raise TemplateError(f"cannot print a {type(value).__name__} directly; use toYaml")
    return str(value)


class Renderer:
    def __init__(self, context: dict):
        self.context = context

    def operand(self, token: tuple) -> Any:
        string, number, dotted, _, _ = token
        if string is not None:
            return json.loads(string)
        if number is not None:
            return int(number)
        value: Any = self.context
        walked = ""
        for part in dotted.strip(".").split("."):
            walked += "." + part
            if not isinstance(value, dict) or part not in value:
                raise TemplateError(f"{walked} is not defined")
            value = value[part]
        return value

    def pipeline(self, text: str) -> Any:
        tokens = []
        position = 0
        while position < len(text):
            match = TOKEN_RE.match(text, position)
            if not match or match.end() == position:
                if text[position:].strip():
                    raise TemplateError(f"cannot parse {text!r} at {text[position:]!r}")
                break
            tokens.append(match.groups())
            position = match.end()
        commands: list[list[tuple]] = [[]]
        for token in tokens:
            if token[4]:
                commands.append([])
            else:
                commands[-1].append(token)
        result: Any = None
        for index, command in enumerate(commands):
            if not command:
                raise TemplateError(f"empty command in {text!r}")
            name = command[0][3]
            if name is not None:
                if name not in FUNCTIONS:
                    raise TemplateError(f"unsupported function {name!r} in {text!r}")
                args = [self.operand(token) for token in command[1:]]
                if index > 0:
                    args.append(result)
                result = FUNCTIONS[name](*args)
            else:
                if len(command) != 1 or index > 0:
                    raise TemplateError(f"cannot parse {text!r}")
                result = self.operand(command[0])
        return result

    def render(self, nodes: list) -> str:
        out = []
        for node in nodes:
            if isinstance(node, Text):
                out.append(node.text)
            elif isinstance(node, Action):
                out.append(_print(self.pipeline(node.pipeline)))
            else:
                out.append(self.render(node.then if _truthy(self.pipeline(node.pipeline)) else node.otherwise))
        return "".join(out)


# --- the chart ----------------------------------------------------------------------------------------------------


def deep_merge(base: dict, override: dict) -> dict:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def set_path(values: dict, dotted: str, value: Any) -> dict:
    """`--set a.b=c` -> {"a": {"b": c}} merged into values (YAML-typed: true, 3, [])."""
    keys = dotted.split(".")
    override: dict = {}
    cursor = override
    for key in keys[:-1]:
        cursor = cursor.setdefault(key, {})
    cursor[keys[-1]] = value
    return deep_merge(values, override)


def render_chart(chart_dir: Path | str, values: dict | None = None, *, release_name: str = "gpu-portal",
                 namespace: str = "gpu-portal", revision: int = 1) -> dict[str, str]:
    """{template file name: rendered text} for every manifest template (helpers and NOTES.txt skipped)."""
    chart_dir = Path(chart_dir)
    chart = yaml.safe_load((chart_dir / "Chart.yaml").read_text())
    merged = deep_merge(yaml.safe_load((chart_dir / "values.yaml").read_text()) or {}, values or {})
    context = {
        "Values": merged,
        "Release": {"Name": release_name, "Namespace": namespace, "Service": "Helm", "Revision": revision},
        "Chart": {"Name": chart["name"], "Version": chart["version"], "AppVersion": chart.get("appVersion", "")},
    }
    renderer = Renderer(context)
    rendered = {}
    for template in sorted((chart_dir / "templates").glob("*.yaml")):
        if template.name.startswith("_"):
            continue
        try:
            rendered[template.name] = renderer.render(parse(template.read_text()))
        except TemplateError as exc:
            raise TemplateError(f"{template.name}: {exc}") from None
    return rendered


def render_objects(chart_dir: Path | str, values: dict | None = None, **kwargs) -> list[dict]:
    objects = []
    for name, text in render_chart(chart_dir, values, **kwargs).items():
        try:
            objects.extend(doc for doc in yaml.safe_load_all(text) if doc)
        except yaml.YAMLError as exc:
            raise TemplateError(f"{name} does not render to valid YAML: {exc}\n{text}") from None
    return objects


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render the gpu-portal chart like `helm template`.")
    parser.add_argument("chart", type=Path)
    parser.add_argument("-f", "--values", type=Path, action="append", default=[])
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--release", default="gpu-portal")
    parser.add_argument("--namespace", default="gpu-portal")
    args = parser.parse_args(argv)
    values: dict = {}
    for path in args.values:
        values = deep_merge(values, yaml.safe_load(path.read_text()) or {})
    for item in args.set:
        key, _, raw = item.partition("=")
        values = set_path(values, key, yaml.safe_load(raw) if raw else "")
    for name, text in render_chart(args.chart, values, release_name=args.release, namespace=args.namespace).items():
        if text.strip():
            sys.stdout.write(f"---\n# Source: {args.chart.name}/templates/{name}\n{text.strip()}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
