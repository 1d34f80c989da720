"""kubectl-style JSONPath (the dialect of k8s.io/client-go/util/jsonpath): compile once, find every match.

Pure, so both the embedded API server (printer columns, `-o jsonpath`) and the AIM path templates
(`omectl.core.aim.paths`) use it.

Supported: an optional surrounding `{...}`, a leading `$`/`@`/`.`, `.field` (with `\\.` escapes), `.*`,
`['key']` / `["key"]` (the key is taken literally, dots included), `[n]` and negative indices, `[a:b]` and
`[a:b:step]` slices, `[*]`, `..` recursive descent, filters `[?(@.path OP value)]` with `==`, `!=`, `<`, `>`,
`<=`, `>=` and existence `[?(@.path)]`, and unions `[a,b]`. A missing field, an out-of-range index or a type
mismatch yields no result, never an error, as client-go does with `AllowMissingKeys(true)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

__all__ = ["JSONPath", "JSONPathError", "compile_jsonpath"]


class JSONPathError(ValueError):
    """The expression is not valid JSONPath. `why` is the reason alone, without the expression."""

    def __init__(self, expression: str, why: str) -> None:
        super().__init__(f"invalid JSONPath {expression!r}: {why}")
        self.expression = expression
        self.why = why


Step = Callable[[list[Any]], list[Any]]

# Characters that end a bare field name (client-go's `isTerminator`).
_TERMINATORS = frozenset(" \t\r\n.,[]$@{}")
_SLICE = re.compile(r"^(-?\d*)(?::(-?\d*))?(?::(-?\d*))?$")
_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)$")
_FILTER_OPERATOR = re.compile(r"^([^!<>=]+)([!<>=]+)(.+)$", re.DOTALL)
_OPERATORS = frozenset({"==", "!=", "<", ">", "<=", ">="})


class JSONPath:
    """A compiled expression. `find` returns every match in document order (empty when nothing matches)."""

    __slots__ = ("_fields", "_steps", "expression")

    def __init__(self, expression: str, steps: list[Step], fields: tuple[str, ...] | None) -> None:
        self.expression = expression
        self._steps = steps
        # Set when the path is only plain `.a.b.c` fields: walked without building intermediate lists.
        self._fields = fields

    def find(self, obj: Any) -> list[Any]:
        if self._fields is not None:
            value = obj
            for name in self._fields:
                if not isinstance(value, dict) or name not in value:
                    return []
                value = value[name]
            return [value]
        values = [obj]
        for step in self._steps:
            values = step(values)
            if not values:
                return values
        return values

    def first(self, obj: Any, default: Any = None) -> Any:
        found = self.find(obj)
        return found[0] if found else default

    def __repr__(self) -> str:
        return f"JSONPath({self.expression!r})"


@lru_cache(maxsize=2048)
def compile_jsonpath(expression: str) -> JSONPath:
    """Compile (and cache) a JSONPath expression; raises `JSONPathError` when it is invalid."""
    body = _strip_braces(expression)
    steps, fields = _Parser(expression, body).parse_path()
    return JSONPath(expression, steps, fields)


def _strip_braces(expression: str) -> str:
    text = expression.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise JSONPathError(expression, "unclosed action")
        text = text[1:-1].strip()
        if "{" in text or "}" in text:
            raise JSONPathError(expression, "only one {...} expression is supported")
    elif text.endswith("}"):
        raise JSONPathError(expression, "unexpected '}'")
    return text


# --- steps ----------------------------------------------------------------------------------------


def _field_step(name: str) -> Step:
    def step(values: list[Any]) -> list[Any]:
        return [v[name] for v in values if isinstance(v, dict) and name in v]

    return step


def _wildcard(values: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, dict):
            out.extend(v.values())
        elif isinstance(v, list):
            out.extend(v)
    return out


def _index_step(index: int) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out = []
        for v in values:
            if isinstance(v, list) and -len(v) <= index < len(v):
                out.append(v[index])
        return out

    return step


def _slice_step(start: int | None, stop: int | None, stride: int | None) -> Step:
    window = slice(start, stop, stride)

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if isinstance(v, list):
                out.extend(v[window])
        return out

    return step


def _recursive(values: list[Any]) -> list[Any]:
    # As client-go does: every map or list in the subtree, parents first; the next step applies to each.
    out: list[Any] = []
    stack = [v for v in reversed(values) if isinstance(v, dict | list)]
    while stack:
        node = stack.pop()
        out.append(node)
        children = node.values() if isinstance(node, dict) else node
        stack.extend(c for c in reversed(list(children)) if isinstance(c, dict | list))
    return out


def _union_step(branches: list[list[Step]]) -> Step:
    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for branch in branches:
            found = values
            for sub in branch:
                found = sub(found)
            out.extend(found)
        return out

    return step


def _run(steps: list[Step], value: Any) -> list[Any]:
    found = [value]
    for step in steps:
        found = step(found)
        if not found:
            break
    return found


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(left: Any, operator: str, right: Any) -> bool:
    # Values of different kinds never match (client-go reports them as an error, which drops the result).
    if not (_is_number(left) and _is_number(right)):
        if type(left) is not type(right) or not isinstance(left, str | bool):
            return False
        if isinstance(left, bool) and operator not in ("==", "!="):
            return False
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if operator == "<":
        return bool(left < right)
    if operator == ">":
        return bool(left > right)
    if operator == "<=":
        return bool(left <= right)
    return bool(left >= right)


_NO_LITERAL = object()


def _filter_step(left: list[Step], operator: str | None, literal: Any, right: list[Step] | None) -> Step:
    def passes(element: Any) -> bool:
        lefts = _run(left, element)
        if operator is None:
            return bool(lefts)
        if len(lefts) != 1:
            return False
        if right is not None:
            rights = _run(right, element)
            if len(rights) != 1:
                return False
            other = rights[0]
        else:
            other = literal
        return _compare(lefts[0], operator, other)

    def step(values: list[Any]) -> list[Any]:
        out: list[Any] = []
        for v in values:
            if isinstance(v, list):
                out.extend(e for e in v if passes(e))
        return out

    return step


# --- parser ---------------------------------------------------------------------------------------


class _Parser:
    def __init__(self, expression: str, text: str) -> None:
        self.expression = expression
        self.text = text
        self.pos = 0
        self.last_name = ""

    def error(self, why: str) -> JSONPathError:
        return JSONPathError(self.expression, why)

    def parse_path(self) -> tuple[list[Step], tuple[str, ...] | None]:
        steps: list[Step] = []
        plain_fields: list[str] | None = []
        text = self.text
        if text[:1] in ("$", "@"):
            self.pos = 1
        elif text and text[0] not in ".[" and text[0] not in _TERMINATORS:
            # A bare leading name (`metadata.name`), as kubectl's custom-columns accepts.
            name = self.read_name()
            steps.append(_field_step(name))
            plain_fields = [name]
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t":
                self.pos += 1
            elif text.startswith("..", self.pos):
                self.pos += 2
                if text.startswith(".", self.pos):
                    raise self.error("invalid multiple recursive descent")
                if self.pos >= len(text):
                    raise self.error("'..' must be followed by a field or a bracket")
                steps.append(_recursive)
                plain_fields = None
                if text[self.pos] != "[":
                    steps.append(self.field_after_dot())
            elif char == ".":
                self.pos += 1
                if self.pos >= len(text) or text[self.pos] in _TERMINATORS:
                    continue  # a lone `.` is the current value
                step = self.field_after_dot()
                steps.append(step)
                if plain_fields is not None and step is not _wildcard:
                    plain_fields.append(self.last_name)
                else:
                    plain_fields = None
            elif char == "[":
                steps.append(self.bracket())
                plain_fields = None
            else:
                raise self.error(f"unrecognized character {char!r} at offset {self.pos}")
        return steps, (tuple(plain_fields) if plain_fields is not None and steps else None)

    def read_name(self) -> str:
        text = self.text
        chars: list[str] = []
        while self.pos < len(text):
            char = text[self.pos]
            if char == "\\" and self.pos + 1 < len(text):
                chars.append(text[self.pos + 1])
                self.pos += 2
                continue
            if char in _TERMINATORS:
                break
            chars.append(char)
            self.pos += 1
        self.last_name = "".join(chars)
        return self.last_name

    def field_after_dot(self) -> Step:
        name = self.read_name()
        if not name:
            raise self.error(f"expected a field name at offset {self.pos}")
        return _wildcard if name == "*" else _field_step(name)

    def bracket(self) -> Step:
        text = self.text
        start = self.pos + 1
        if text.startswith("[?(", self.pos):
            return self.filter()
        end = self.closing_bracket(start)
        self.pos = end + 1
        content = text[start:end].strip()
        parts = _split_top_level(content, ",")
        if len(parts) > 1:
            return _union_step([[self.bracket_item(p.strip())] for p in parts])
        return self.bracket_item(content)

    def closing_bracket(self, start: int) -> int:
        end = self.closing(start, "]")
        if end < 0:
            raise self.error("unterminated array")
        return end

    def closing(self, start: int, close: str, opening: str = "") -> int:
        """The offset of the first `close` from `start` outside quotes and outside any `opening`...`close` pair
        opened after `start`; -1 when there is none."""
        text = self.text
        quote = ""
        depth = 0
        i = start
        while i < len(text):
            char = text[i]
            if quote:
                if char == "\\":
                    i += 1
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char == opening:
                depth += 1
            elif char == close:
                if depth == 0:
                    return i
                depth -= 1
            i += 1
        return -1

    def bracket_item(self, item: str) -> Step:
        if not item:
            raise self.error("empty brackets")
        if item == "*":
            return _wildcard
        if item[0] in "'\"":
            return _field_step(self.unquote(item))
        match = _SLICE.match(item)
        if match:
            return self.index_or_slice(item, match)
        if item[0].isalpha() or item[0] == "_":
            return _field_step(item)
        raise self.error(f"invalid array index {item}")

    def index_or_slice(self, item: str, match: re.Match[str]) -> Step:
        first, second, third = match.groups()
        if second is None and third is None:
            if not first or first == "-":
                raise self.error(f"invalid array index {item}")
            return _index_step(int(first))

        def bound(text: str | None) -> int | None:
            if text is None or text == "":
                return None
            if text == "-":
                raise self.error(f"array index {item} is not a number")
            return int(text)

        stride = bound(third)
        if stride is not None and stride <= 0:
            raise self.error(f"slice step must be positive in [{item}]")
        return _slice_step(bound(first), bound(second), stride)

    def unquote(self, item: str) -> str:
        quote = item[0]
        if len(item) < 2 or item[-1] != quote:
            raise self.error(f"unterminated quoted string {item}")
        body = item[1:-1]
        out: list[str] = []
        i = 0
        while i < len(body):
            char = body[i]
            if char == "\\" and i + 1 < len(body):
                out.append(body[i + 1])
                i += 2
                continue
            if char == quote:
                raise self.error(f"unescaped quote in {item}")
            out.append(char)
            i += 1
        return "".join(out)

    def filter(self) -> Step:
        text = self.text
        start = self.pos + 3
        i = self.closing(start, ")", "(")
        if i < 0:
            raise self.error("unterminated filter")
        if not text.startswith("]", i + 1):
            raise self.error("unclosed array, expected ']' after the filter")
        self.pos = i + 2
        condition = text[start:i].strip()
        if not condition:
            raise self.error("empty filter")
        match = _FILTER_OPERATOR.match(condition)
        if match is None:
            return _filter_step(self.sub_path(condition), None, None, None)
        left_text, operator, right_text = (g.strip() for g in match.groups())
        if operator not in _OPERATORS:
            raise self.error(f"unsupported filter operator {operator!r}")
        if not left_text or not right_text:
            raise self.error(f"incomplete filter {condition!r}")
        left = self.sub_path(left_text)
        literal = self.literal(right_text)
        if literal is _NO_LITERAL:
            return _filter_step(left, operator, None, self.sub_path(right_text))
        return _filter_step(left, operator, literal, None)

    def literal(self, text: str) -> Any:
        if text[0] in "'\"":
            return self.unquote(text)
        if text in ("true", "false"):
            return text == "true"
        if _NUMBER.match(text):
            return float(text) if "." in text else int(text)
        return _NO_LITERAL

    def sub_path(self, text: str) -> list[Step]:
        # `@` and `$` both mean the element being filtered, as in client-go.
        if text[0] not in "@$.":
            raise self.error(f"filter operand {text!r} must be a path starting with '@' or a literal")
        steps, _ = _Parser(self.expression, text).parse_path()
        return steps


def _split_top_level(text: str, separator: str) -> list[str]:
    parts: list[str] = []
    quote = ""
    current: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and i + 1 < len(text):
                current.append(char)
                i += 1
                char = text[i]
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == separator:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(char)
        i += 1
    parts.append("".join(current))
    return parts
