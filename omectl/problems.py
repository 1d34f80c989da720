"""Errors as the one-line messages an operator reads: files that cannot be read or written, YAML that does not
parse, values that do not validate.

Imports nothing else of omectl (and neither YAML nor pydantic): every layer may use it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["one_line", "output_problem", "read_problem", "validation_problems", "yaml_problem"]


def one_line(text: object) -> str:
    """`text` with every run of whitespace (newlines included) made one space."""
    return " ".join(str(text).split())


def read_problem(exc: BaseException) -> str:
    """Why a file could not be read as text: the OS's reason, or that it is no UTF-8 text (a binary file)."""
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return one_line(exc)


def output_problem(path: Path, *, directory: bool = False) -> str | None:
    """Why `path` cannot be written as a file (or, with `directory`, be the directory files are written to), judged
    without creating anything; None when it looks writable. For a command to refuse before it starts anything."""
    if path.exists():
        if path.is_dir() != directory:
            return "is a directory" if path.is_dir() else "is not a directory"
        return None if os.access(path, os.W_OK) else "is not writable"
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir():
        return f"cannot be created: {parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"cannot be created: {parent} is not writable"
    return None


def yaml_problem(exc: BaseException) -> str:
    """A YAML error as one line: `problem (line N, column M)`."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or "invalid YAML"
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{one_line(problem)}{where}"


def validation_problems(errors: Iterable[Mapping[str, Any]], *, unknown: str = "unknown field") -> str:
    """pydantic's `ValidationError.errors()` as `field: problem; field: problem` in omectl's words, the first
    problem of each field only (a value that fits no member of a union fails once per member)."""
    problems: dict[str, str] = {}
    for error in errors:
        field = ".".join(str(part) for part in error.get("loc", ()))
        problems.setdefault(field, _problem(error, unknown))
    return "; ".join(f"{field}: {problem}" if field else problem for field, problem in problems.items())


_TYPES = {
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "string_type": "must be a string",
    "path_type": "must be a path",
    "dict_type": "must be a mapping",
    "list_type": "must be a list",
}
_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be more than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "string_too_short": ("min_length", "must have at least {} characters"),
    "string_too_long": ("max_length", "must have at most {} characters"),
}


def _problem(error: Mapping[str, Any], unknown: str) -> str:
    kind = str(error.get("type", ""))
    context = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return unknown
    if kind in ("value_error", "assertion_error") and "error" in context:
        return one_line(context["error"])
    if kind in _BOUNDS:
        key, template = _BOUNDS[kind]
        problem = template.format(_number(context.get(key)))
    elif kind in ("literal_error", "enum"):
        problem = f"must be one of {context.get('expected')}"
    else:
        problem = _TYPES.get(kind, "is not valid")
    value = error.get("input")
    if isinstance(value, str | int | float | bool) or value is None:
        problem += f" (got {value!r})"
    return problem


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)
