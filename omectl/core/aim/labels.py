"""Label propagation from an AIM parent to its children.

What propagates: every parent label whose key starts with `aim.eai.amd.com/`, always; any other parent label iff
the resolved config has `labelPropagation.enabled: true` and one of `labelPropagation.match` matches its key.

Patterns match the whole key, as Go's `path/filepath.Match` does: `*` is any run of characters except `/`, `?` one
character except `/`, `[...]` a class of characters and ranges (`[a-z]`; `[!...]` or `[^...]` negates; a class may
match `/`), `\\` escapes the next character. So `org.example/*` matches `org.example/team` but not
`org.example/a/b`, `compliance.*/severity` matches `compliance.sec/severity`, and a bare `*` matches no key with a
prefix. A malformed pattern (unclosed `[`, an empty class, a range with no end, a trailing `\\`, an empty pattern)
is rejected by admission (`validate_pattern`) and skipped when matching.

Ownership of a child's labels: a key the child carries that we did not propagate is the child's own and is never
overwritten or removed. Keys we propagated are recorded on the child in the annotation
`aim.eai.amd.com/propagated-labels` (sorted, comma-separated); on the next reconcile a recorded key follows the
parent's value, and is removed when the parent dropped it or it stopped matching. Jobs get the labels on the Job and
on its pod template (`propagate_to_job`), which records its keys in its own annotations; since a Job's pod template
is immutable once created, the controller applies the template part when it creates the Job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any, Final

from omectl.core.jsonish import as_mapping

AIM_LABEL_PREFIX: Final = "aim.eai.amd.com/"
"""Labels with this prefix always propagate."""

PROPAGATED_LABELS_ANNOTATION: Final = "aim.eai.amd.com/propagated-labels"
"""Annotation on a child: the label keys we propagated onto it, sorted and comma-separated."""


class PatternError(ValueError):
    """A malformed label pattern."""


def validate_pattern(pattern: str) -> str | None:
    """Why `pattern` is malformed, or None when it is usable."""
    try:
        _compile(pattern)
    except PatternError as error:
        return str(error)
    return None


def matches(pattern: str, key: str) -> bool:
    """Whether `pattern` matches the whole of `key`; a malformed pattern matches nothing."""
    try:
        return _compile(pattern).fullmatch(key) is not None
    except PatternError:
        return False


def matches_any(patterns: Iterable[str], key: str) -> bool:
    return any(matches(pattern, key) for pattern in patterns if isinstance(pattern, str))


def should_propagate(key: str, config: Mapping[str, Any]) -> bool:
    """Whether a parent label with `key` propagates under the resolved runtime config `config`."""
    if key.startswith(AIM_LABEL_PREFIX):
        return True
    propagation = config.get("labelPropagation")
    if not isinstance(propagation, Mapping) or propagation.get("enabled") is not True:
        return False
    patterns = propagation.get("match")
    return isinstance(patterns, list) and matches_any(patterns, key)


def propagate(
    parent_labels: Mapping[str, str],
    child_labels: Mapping[str, str],
    config: Mapping[str, Any],
    previously_propagated: Iterable[str],
) -> tuple[dict[str, str], tuple[str, ...]]:
    """The child's new labels and the keys now propagated onto it (sorted).

    `previously_propagated` are the keys recorded by the last propagation (`read_propagated_keys`); any other key
    the child has is its own and stays as it is."""
    previous = frozenset(previously_propagated)
    labels = dict(child_labels)
    propagated: set[str] = set()
    for key, value in parent_labels.items():
        if not should_propagate(key, config):
            continue
        if key in child_labels and key not in previous:
            continue  # the child's own label
        labels[key] = value
        propagated.add(key)
    for key in previous - propagated:
        labels.pop(key, None)
    return labels, tuple(sorted(propagated))


def read_propagated_keys(obj: Mapping[str, Any]) -> frozenset[str]:
    """The keys recorded in the child's `aim.eai.amd.com/propagated-labels` annotation."""
    annotations = _metadata(obj).get("annotations")
    text = annotations.get(PROPAGATED_LABELS_ANNOTATION) if isinstance(annotations, Mapping) else None
    if not isinstance(text, str):
        return frozenset()
    return frozenset(key.strip() for key in text.split(",") if key.strip())


def propagate_to_object(
    parent: Mapping[str, Any], child: Mapping[str, Any], config: Mapping[str, Any]
) -> dict[str, Any]:
    """A copy of `child` (any object) with its labels propagated from `parent` and the annotation updated."""
    previous = read_propagated_keys(child)
    metadata = dict(_metadata(child))
    labels, keys = propagate(_labels(parent), as_mapping(metadata.get("labels")), config, previous)
    _store(metadata, "labels", labels)
    annotations = dict(as_mapping(metadata.get("annotations")))
    if keys:
        annotations[PROPAGATED_LABELS_ANNOTATION] = ",".join(keys)
    else:
        annotations.pop(PROPAGATED_LABELS_ANNOTATION, None)
    _store(metadata, "annotations", annotations)
    out = dict(child)
    out["metadata"] = metadata
    return out


def propagate_to_job(parent: Mapping[str, Any], job: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    """`propagate_to_object` for a Job and for its pod template (`spec.template`), each keeping its own keys and
    recording its own propagated keys (the template in its own annotations, so they reach the pods too)."""
    out = propagate_to_object(parent, job, config)
    spec = dict(as_mapping(out.get("spec")))
    spec["template"] = propagate_to_object(parent, as_mapping(spec.get("template")), config)
    out["spec"] = spec
    return out


@lru_cache(maxsize=1024)
def _compile(pattern: str) -> re.Pattern[str]:
    if not pattern:
        raise PatternError("pattern is empty")
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "*":
            out.append("[^/]*")
            index += 1
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "\\":
            if index + 1 >= len(pattern):
                raise PatternError(f"pattern {pattern!r} ends with an unfinished escape '\\'")
            out.append(re.escape(pattern[index + 1]))
            index += 2
        elif char == "[":
            class_regex, index = _character_class(pattern, index)
            out.append(class_regex)
        else:
            out.append(re.escape(char))
            index += 1
    return re.compile("".join(out), re.DOTALL)


def _character_class(pattern: str, start: int) -> tuple[str, int]:
    """The regex for the class opening at `start`, and the index after its `]`."""
    index = start + 1
    negated = index < len(pattern) and pattern[index] in "!^"
    if negated:
        index += 1
    ranges: list[tuple[str, str]] = []
    while index >= len(pattern) or pattern[index] != "]" or not ranges:
        if index < len(pattern) and pattern[index] == "]":
            raise PatternError(f"pattern {pattern!r} has an empty character class at offset {start}")
        low, index = _class_char(pattern, index, start)
        high = low
        if index < len(pattern) and pattern[index] == "-":
            high, index = _class_char(pattern, index + 1, start)
        ranges.append((low, high))
    index += 1  # the closing `]`
    # As in Go, a reversed range is valid and contains no character.
    body = "".join(
        re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}" for low, high in ranges if low <= high
    )
    if not body:
        return ("[\\s\\S]" if negated else "(?!)"), index
    return f"[{'^' if negated else ''}{body}]", index


def _class_char(pattern: str, index: int, start: int) -> tuple[str, int]:
    """One character of a class (an escape taken literally); `-` and `]` are not characters there, as in Go."""
    if index >= len(pattern):
        raise PatternError(f"pattern {pattern!r} has an unclosed character class at offset {start}")
    char = pattern[index]
    if char in "-]":
        raise PatternError(f"pattern {pattern!r} has a malformed range in the character class at offset {start}")
    if char == "\\":
        if index + 1 >= len(pattern):
            raise PatternError(f"pattern {pattern!r} ends with an unfinished escape '\\'")
        return pattern[index + 1], index + 2
    return char, index + 1


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_mapping(obj.get("metadata"))


def _labels(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return as_mapping(_metadata(obj).get("labels"))


def _store(metadata: dict[str, Any], field: str, value: dict[str, str]) -> None:
    if value:
        metadata[field] = value
    else:
        metadata.pop(field, None)
