"""`-l/--selector`: kubectl's label selector syntax (omectl.cli.selectors)."""

from __future__ import annotations

import pytest
import typer

from omectl.cli.selectors import parse_selector

LABELS = {"region": "eu", "gpu": "h200", "example.com/tier": "gold"}


@pytest.mark.parametrize(
    ("text", "selected"),
    [
        ("region=eu", True),
        ("region==eu", True),
        ("region=us", False),
        ("region!=us", True),
        ("zone!=a", True),  # != holds when the label is absent, as in Kubernetes
        ("gpu in (h100, h200)", True),
        ("gpu notin (h100,h200)", False),
        ("zone notin (a)", True),
        ("example.com/tier", True),
        ("zone", False),
        ("!zone", True),
        ("!gpu", False),
        ("region=eu,gpu in (h100,h200),!zone", True),
        ("region=eu,gpu=h100", False),
        ("", True),
    ],
)
def test_equality_and_set_based_requirements_all_must_hold(text: str, selected: bool) -> None:
    selector = parse_selector(text)
    assert selector is not None
    assert selector.matches(LABELS) is selected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("region=eu,", "'' is not a label key"),
        ("gpu in ()", "'in' needs at least one value"),
        ("gpu in (h100", "'gpu in (h100' is not a label key"),
        ("region=e u", "'region=e u' is not a label key"),
        ("bad_/key=1", "'bad_/key' is not a label key"),
        ("region=-eu", "'-eu' is not a label value"),
    ],
)
def test_a_selector_that_does_not_parse_is_a_usage_error_naming_it(text: str, problem: str) -> None:
    with pytest.raises(typer.BadParameter) as raised:
        parse_selector(text)
    assert raised.value.message == f"invalid label selector {text!r}: {problem}"


def test_no_selector_is_none() -> None:
    assert parse_selector(None) is None
