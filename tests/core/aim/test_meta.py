"""core/aim/meta.py: `aim.eai.amd.com/reconciliation-paused` pauses only at the exact value "true", as upstream's
`IsReconciliationPaused` compares it; label values are sanitised as upstream's SanitizeLabelValue makes them."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.meta import RECONCILIATION_PAUSED, reconciliation_paused, sanitized_label_value


@pytest.mark.parametrize(
    ("metadata", "paused"),
    [
        ({"annotations": {RECONCILIATION_PAUSED: "true"}}, True),
        ({"annotations": {RECONCILIATION_PAUSED: "True"}}, False),
        ({"annotations": {RECONCILIATION_PAUSED: "false"}}, False),
        ({"annotations": {RECONCILIATION_PAUSED: ""}}, False),
        ({"annotations": {"other": "true"}}, False),
        ({"annotations": None}, False),
        ({}, False),
        (None, False),
    ],
)
def test_only_the_value_true_pauses(metadata: Any, paused: bool) -> None:
    assert reconciliation_paused({"metadata": metadata}) is paused


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("--Meta/Llama 3.1:8B--", "meta_llama_3.1_8b"),
        ("Svc.Name/x", "svc.name_x"),
        ("a" * 80, "a" * 63),
        ("x" * 70 + ".", "x" * 63),
        ("x" * 62 + "/y", "x" * 62),
        ("//", ""),
    ],
)
def test_label_values_are_sanitised_as_upstream_sanitises_them(text: str, value: str) -> None:
    assert sanitized_label_value(text) == value
