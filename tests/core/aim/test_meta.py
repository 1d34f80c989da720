"""`aim.eai.amd.com/reconciliation-paused` (core/aim/meta.py): only the exact value "true" pauses, as upstream's
`IsReconciliationPaused` compares it."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.meta import RECONCILIATION_PAUSED, reconciliation_paused


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
