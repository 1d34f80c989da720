"""Object metadata shared by the children an AIMService renders: owner references and the labels we always set.

Children are labelled `app.kubernetes.io/managed-by: omectl` (omectl's controller writes and owns them; upstream
writes `aim-engine`), `app.kubernetes.io/component: <inference|routing|model-cache>` and
`aim.eai.amd.com/service: <AIMService name>` (cut to 63 characters). Labels propagated from the AIMService
(`omectl.core.aim.labels`) are added by the controller on top of these and never replace them (a child's own
labels win).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, Final

AIM_API_VERSION: Final = "aim.eai.amd.com/v1alpha1"
AIM_SERVICE_KIND: Final = "AIMService"

MANAGED_BY_LABEL: Final = "app.kubernetes.io/managed-by"
COMPONENT_LABEL: Final = "app.kubernetes.io/component"
SERVICE_LABEL: Final = "aim.eai.amd.com/service"
_NOT_LABEL_VALUE: Final = re.compile(r"[^a-z0-9._-]+")
MANAGED_BY: Final = "omectl"
RECONCILIATION_PAUSED: Final = "aim.eai.amd.com/reconciliation-paused"
"""`"true"` on any AIM object: the controller leaves it alone (no status, no children), as upstream does."""


def reconciliation_paused(obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    return isinstance(annotations, Mapping) and annotations.get(RECONCILIATION_PAUSED) == "true"


def owner_reference(owner: Mapping[str, Any], *, default_kind: str = AIM_SERVICE_KIND) -> dict[str, Any]:
    """A controller owner reference to `owner` (its own apiVersion and kind when it carries them)."""
    metadata = owner.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return {
        "apiVersion": str(owner.get("apiVersion") or AIM_API_VERSION),
        "kind": str(owner.get("kind") or default_kind),
        "name": str(metadata.get("name") or ""),
        "uid": str(metadata.get("uid") or ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }


def child_labels(service: Mapping[str, Any], component: str) -> dict[str, str]:
    """The labels every child of `service` carries."""
    return {
        COMPONENT_LABEL: component,
        MANAGED_BY_LABEL: MANAGED_BY,
        SERVICE_LABEL: label_value(name_of(service)),
    }


def label_value(text: str) -> str:
    """`text` cut to the 63 characters a label value may hold, ending in a letter or digit."""
    return text[:63].rstrip("-_.")


def sanitized_label_value(text: str) -> str:
    """Upstream's SanitizeLabelValue: lowercased, runs of other characters `_`, no `_.-` at the ends, at most 63
    ("" when nothing is left)."""
    return label_value(_NOT_LABEL_VALUE.sub("_", text.lower()).strip("_.-"))


def name_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""


def namespace_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("namespace") or "") if isinstance(metadata, Mapping) else ""


def created_at(obj: Mapping[str, Any]) -> datetime | None:
    """`metadata.creationTimestamp` as a time (the API server's whole seconds), or None."""
    metadata = obj.get("metadata")
    stamp = metadata.get("creationTimestamp") if isinstance(metadata, Mapping) else None
    try:
        return datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
    except ValueError:
        return None


def maker_gone(made: Mapping[str, Any], makers: Iterable[Mapping[str, Any]]) -> bool:
    """Whether what made `made` is gone, told without having seen it go: `makers` are the live objects that could
    have made it (its maker's kind, namespace and name), and none was created before it. One created after it was made
    again later and did not make it; one created in the same second cannot be told from its maker, so it counts as
    the maker, as does any without a creation time."""
    made_at = created_at(made)
    for maker in makers:
        created = created_at(maker)
        if made_at is None or created is None or created <= made_at:
            return False
    return True
