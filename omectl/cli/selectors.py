"""`-l/--selector`: kubectl's label selector syntax, matched against the labels of cluster registrations.

Equality-based (`key=value`, `key==value`, `key!=value`) and set-based (`key in (a,b)`, `key notin (a,b)`, `key`,
`!key`) requirements, comma-separated, all of which must hold. The text becomes a metav1.LabelSelector
(matchLabels, matchExpressions) and matches through `omectl.core.fleet_runtimes.selector_matches`, the matcher the
controller uses for FleetRuntime placement. A selector that does not parse is a usage error (exit 2) naming it.
(The embedded API server has its own, complete parser, `omectl.sim.apiserver.selectors`, which the CLI may not
import.)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import typer

from omectl.core.fleet_runtimes import selector_matches

__all__ = ["SELECTOR_OPTION", "LabelSelector", "parse_selector"]

SELECTOR_OPTION: Any = typer.Option(
    None,
    "-l",
    "--selector",
    help="Only the clusters whose registration labels match: '=', '==', '!=', 'in', 'notin', KEY, !KEY "
    "(e.g. -l region=eu,gpu in (h100,h200)).",
    show_default=False,
)

_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}")
_VALUE = re.compile(rf"({_NAME})?")
_SET = re.compile(r"^(?P<key>[^\s!=(),]+)\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)$")
_EQUALITY = re.compile(r"^(?P<key>[^\s!=(),]+)\s*(?P<op>==|=|!=)\s*(?P<value>[^\s!=(),]*)$")


class LabelSelector:
    """A parsed selector; `matches(labels)` says whether a registration's labels satisfy every requirement."""

    def __init__(self, text: str, selector: dict[str, Any]) -> None:
        self.text = text
        self.selector = selector

    def matches(self, labels: Mapping[str, str]) -> bool:
        return selector_matches(self.selector, labels)

    def __str__(self) -> str:
        return self.text


def _split(text: str) -> list[str]:
    """The requirements: split at commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return [part.strip() for part in parts]


def _requirement(text: str) -> dict[str, Any]:
    if text.startswith("!"):
        key, operator, values = text[1:].strip(), "DoesNotExist", []
    elif found := _SET.match(text):
        key = found["key"]
        operator = "In" if found["op"] == "in" else "NotIn"
        values = [value.strip() for value in found["values"].split(",")]
        if values == [""]:
            raise ValueError(f"'{found['op']}' needs at least one value")
    elif found := _EQUALITY.match(text):
        key, values = found["key"], [found["value"]]
        operator = "NotIn" if found["op"] == "!=" else "In"
    else:
        key, operator, values = text, "Exists", []
    if not _KEY.fullmatch(key):
        raise ValueError(f"{key!r} is not a label key")
    for value in values:
        if not _VALUE.fullmatch(value):
            raise ValueError(f"{value!r} is not a label value")
    return {"key": key, "operator": operator, "values": values}


def parse_selector(text: str | None) -> LabelSelector | None:
    """The selector `-l` gave (None without one); a usage error when it does not parse."""
    if text is None:
        return None
    try:
        requirements = [_requirement(part) for part in _split(text)] if text.strip() else []
    except ValueError as exc:
        raise typer.BadParameter(f"invalid label selector {text!r}: {exc}", param_hint="'-l' / '--selector'") from None
    return LabelSelector(text, {"matchExpressions": requirements})
