"""A minimal CEL syntax check for admission policy expressions: what can be told without a CEL compiler.

Closed string literals, balanced and matching brackets, no empty expression or dangling operator, every free
identifier a root Kubernetes gives an admission policy (kubernetes/api v0.35.0 `admissionregistration/v1/types.go`,
Validation.Expression: object, oldObject, request, params, namespaceObject, variables, authorizer) or a variable a
macro binds (`list.all(c, ...)`), every function one of CEL's or Kubernetes' libraries the portal uses, and every
`variables.<name>` defined before use. Types, costs and the quantity library are the API server's to check."""

from __future__ import annotations

import re

ROOTS = {"object", "oldObject", "request", "namespaceObject", "variables", "authorizer"}
LITERALS = {"true", "false", "null", "in"}
FUNCTIONS = {"has", "size", "string", "int", "uint", "double", "bool", "quantity", "isQuantity", "matches",
             "startsWith", "endsWith", "contains", "all", "exists", "exists_one", "filter", "map", "compareTo",
             "split", "lowerAscii", "upperAscii", "indexOf", "join", "type", "dyn", "sum", "min", "max"}
_TOKEN = re.compile(r"""\s+|(?P<string>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")|(?P<number>\d+(?:\.\d+)?u?)|"""
                    r"""(?P<ident>[A-Za-z_]\w*)|(?P<open>[(\[{])|(?P<close>[)\]}])|(?P<op>&&|\|\||==|!=|<=|>=|[-+*/%<>!?:.,])""")
_MACRO_VARIABLE = re.compile(r"\.(?:all|exists|exists_one|filter|map)\(\s*([A-Za-z_]\w*)\s*,")
_PAIRS = {")": "(", "]": "[", "}": "{"}


def cel_syntax_error(expression: str, *, variables: set[str], params: bool = False) -> str | None:
    """None when the expression passes; else what is wrong, in a line."""
    if not expression.strip():
        return "the expression is empty"
    bound = set(_MACRO_VARIABLE.findall(expression))
    roots = ROOTS | bound | ({"params"} if params else set())
    stack: list[str] = []
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(expression):
        match = _TOKEN.match(expression, position)
        if not match:
            quote = expression[position] in "'\""
            return "a string literal is not closed" if quote else f"unexpected character {expression[position]!r}"
        position = match.end()
        if match.lastgroup:
            tokens.append((match.lastgroup, match.group(match.lastgroup)))
    for index, (kind, text) in enumerate(tokens):
        previous = tokens[index - 1] if index else ("", "")
        following = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        if kind == "open":
            stack.append(text)
        elif kind == "close":
            if not stack or stack.pop() != _PAIRS[text]:
                return f"unbalanced {text!r}"
        elif kind == "ident" and previous[1] != "." and text not in LITERALS:
            if following[1] == "(":
                if text not in FUNCTIONS:
                    return f"unknown function {text}()"
            elif text not in roots:
                return f"unknown identifier {text!r}"
        elif kind == "ident" and previous[1] == "." and index >= 2 and tokens[index - 2][1] == "variables":
            if text not in variables:
                return f"variables.{text} is used before it is defined"
    if stack:
        return f"unclosed {stack[-1]!r}"
    if tokens[-1][0] == "op" or tokens[0][1] in {"&&", "||", "==", "*", "/", "?", ":", ".", ","}:
        return "the expression starts or ends with an operator"
    return None
