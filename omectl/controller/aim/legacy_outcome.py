"""What one legacy kind's reconcile step found (`omectl.controller.aim.legacy`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omectl.core.aim.legacy.status import Component


@dataclass(frozen=True)
class Outcome:
    """A step's components (after `RuntimeConfig`), its extra conditions, and the status fields it sets (a field set
    to None is removed; fields it does not name are kept as they are)."""

    components: tuple[Component, ...] = ()
    conditions: tuple[dict[str, str], ...] = ()
    fields: Mapping[str, Any] = field(default_factory=dict)
