"""Accessors for decoded JSON (Kubernetes objects as dicts): a field read as the type it should have, else empty.

A field that is missing, null or of another type reads as empty, so a reader of a malformed object sees "nothing
set" instead of failing on it; the validators say what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["as_list", "as_mapping"]


def as_mapping(value: object) -> Mapping[str, Any]:
    """`value` itself when it is a mapping, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[Any]:
    """The items of `value` as a new list when it is a list or tuple, else an empty list."""
    return list(value) if isinstance(value, list | tuple) else []
