"""Conversion of the CLI's plain parameter types without pydantic, so a command starts in less CPU time.

typer 0.29 converts every parameter value (a default included) through a pydantic `TypeAdapter` built on first
use, so the first command with an option to process imports pydantic and typer's adapters (about 0.1 CPU-s, a
third of `omectl cluster list`). The types omectl's commands use (`str`, `bool`, `int`, `float`, `Path`, an Enum or
Literal choice, and lists or tuples of those) convert here instead, with click's wording for a bad value ("'x' is
not a valid integer."); anything else (a `parser=`, a datetime, a file) still goes to typer's own conversion.

This replaces `typer.core.build_runtime_param`, a private name: it is safe only while typer is pinned at the
version it was written against (`TYPER_VERSION`, pinned in pyproject.toml and constraints.txt). With any other
version `install` leaves typer alone (commands then convert through pydantic again, correct but slower) and
`tests/cli/test_startup.py` fails, so an upgrade is a deliberate step that re-reads typer's `_coercion` module.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args, get_origin

import typer
from typer import _click as click
from typer import _coercion
from typer._click.exceptions import BadParameter
from typer._display import describe_number_range
from typer._param_types import choice_coercion_annotation, coerce_cli_choice, coerce_cli_path, lenient_issubclass
from typer.models import ParameterInfo

if TYPE_CHECKING:
    from typer.core import _TyperParameter

TYPER_VERSION = "0.29.2"

Convert = Callable[[Any, "click.Context", "_TyperParameter"], Any]

_TRUE = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE = frozenset({"0", "off", "f", "false", "n", "no"})


@dataclass(frozen=True)
class LightRuntimeParam(_coercion.RuntimeParam):
    """typer's runtime coercion contract, with a converter of our own; a `ValueError` is a bad parameter."""

    convert: Convert

    def _coerce_value(self, value: Any, param: _TyperParameter, ctx: click.Context) -> Any:
        try:
            return self.convert(value, ctx, param)
        except ValueError as exc:
            raise BadParameter(str(exc), ctx=ctx, param=param) from None


def _to_str(value: Any, ctx: click.Context, param: _TyperParameter) -> str:
    if isinstance(value, bytes):
        for encoding in (sys.getfilesystemencoding(), "utf-8"):
            try:
                return value.decode(encoding)
            except UnicodeError:
                continue
        return value.decode("utf-8", "replace")
    return str(value)


def _to_bool(value: Any, ctx: click.Context, param: _TyperParameter) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in _TRUE:
            return True
        if text in _FALSE or text == "":
            return False
    raise ValueError(f"{value!r} is not a valid boolean.")


def _to_int(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            try:
                number = float(value.strip())
            except ValueError:
                pass
            else:
                if number.is_integer():
                    return int(number)
    raise ValueError(f"{value!r} is not a valid integer.")


def _to_float(value: Any) -> float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            pass
    raise ValueError(f"{value!r} is not a valid float.")


def _number(kind: type[Any], info: ParameterInfo) -> Convert:
    parse = _to_int if kind is int else _to_float
    low, high = info.min, info.max

    def convert(value: Any, ctx: click.Context, param: _TyperParameter) -> Any:
        number = parse(value)
        if info.clamp:
            if low is not None and number < low:
                return kind(low)
            if high is not None and number > high:
                return kind(high)
            return number
        if (low is not None and number < low) or (high is not None and number > high):
            raise ValueError(f"{number} is not in the range {describe_number_range(low, high)}.")
        return number

    return convert


def _path(annotation: type[Path], info: ParameterInfo) -> Convert:
    path_type = info.path_type or annotation

    as_path = path_type if isinstance(path_type, type) and issubclass(path_type, Path) else None

    def convert(value: Any, ctx: click.Context, param: _TyperParameter) -> Any:
        if as_path is not None and not isinstance(value, as_path):
            if not isinstance(value, str | os.PathLike):
                raise ValueError(f"{value!r} is not a valid path.")
            value = as_path(value)
        return coerce_cli_path(value, info, path_type=path_type, param=param, ctx=ctx)

    return convert


def _choice(choices: Sequence[Any], case_sensitive: bool) -> Convert:
    def convert(value: Any, ctx: click.Context, param: _TyperParameter) -> Any:
        return coerce_cli_choice(value, choices=choices, case_sensitive=case_sensitive, ctx=ctx)

    return convert


def _leaf(annotation: Any, info: ParameterInfo) -> Convert | None:
    if info.parser is not None:
        return None
    choice = choice_coercion_annotation(annotation, info)
    if choice is not None:
        return _choice(*choice)
    if annotation is str:
        return _to_str
    if annotation is bool:
        return _to_bool
    if annotation in (int, float):
        return _number(annotation, info)
    if lenient_issubclass(annotation, Path) and not lenient_issubclass(annotation, Enum):
        return _path(annotation, info)
    return None


def converter(annotation: Any, info: ParameterInfo) -> Convert | None:
    """How a value of `annotation` converts here, or None when typer's own conversion must do it."""
    origin = get_origin(annotation)
    if origin is list:
        (item_type,) = get_args(annotation)
        item = _leaf(item_type, info)
        if item is None:
            return None

        def convert_list(value: Any, ctx: click.Context, param: _TyperParameter) -> list[Any]:
            values = value if isinstance(value, list | tuple) else [value]
            return [item(one, ctx, param) for one in values]

        return convert_list
    if origin is tuple:
        items = [_leaf(item_type, info) for item_type in get_args(annotation)]
        if not items or any(item is None for item in items):
            return None
        leaves: list[Convert] = [item for item in items if item is not None]

        def convert_tuple(value: Any, ctx: click.Context, param: _TyperParameter) -> tuple[Any, ...]:
            if not isinstance(value, list | tuple):
                raise ValueError("value is not a valid tuple")
            if len(value) != len(leaves):
                raise ValueError(f"{len(leaves)} values are required, but {len(value)} given.")
            return tuple(leaf(one, ctx, param) for leaf, one in zip(leaves, value, strict=True))

        return convert_tuple
    if origin is not None:
        return None
    return _leaf(annotation, info)


_typer_build = _coercion.build_runtime_param


def build_runtime_param(descriptor: _coercion.TypeDescriptor) -> _coercion.RuntimeParam:
    """typer's `build_runtime_param`, but the plain types convert here (see the module's notes)."""
    if descriptor.file_annotation is None:
        convert = converter(descriptor.annotation, descriptor.parameter_info)
        if convert is not None:
            return LightRuntimeParam(
                annotation=descriptor.annotation, parameter_info=descriptor.parameter_info, convert=convert
            )
    return _typer_build(descriptor)


def install() -> bool:
    """Have typer's parameters convert through `build_runtime_param`; False (and nothing changed) when typer is not
    the version this module was written against."""
    if typer.__version__ != TYPER_VERSION:
        return False
    from typer import core

    core.build_runtime_param = build_runtime_param  # type: ignore[attr-defined]
    return True
