"""as_mapping / as_list: a field read as the type it should have, else empty."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import pytest

from omectl.core.jsonish import as_list, as_mapping


def test_as_mapping_returns_a_mapping_itself() -> None:
    spec = {"replicas": 2}
    assert as_mapping(spec) is spec
    frozen = MappingProxyType({"a": 1})
    assert as_mapping(frozen) is frozen


@pytest.mark.parametrize("value", [None, "spec", 3, ["a"], ("a",), True])
def test_as_mapping_reads_anything_else_as_empty(value: Any) -> None:
    assert as_mapping(value) == {}


def test_as_mapping_of_a_missing_field_is_empty() -> None:
    assert as_mapping({}.get("spec")) == {}


def test_as_list_copies_a_list_or_tuple() -> None:
    env = [{"name": "A"}]
    listed = as_list(env)
    assert listed == env and listed is not env
    listed.append({"name": "B"})
    assert env == [{"name": "A"}]
    assert as_list(("x", "y")) == ["x", "y"]


@pytest.mark.parametrize("value", [None, "ab", {"a": 1}, 3, {"a"}])
def test_as_list_reads_anything_else_as_empty(value: Any) -> None:
    assert as_list(value) == []
