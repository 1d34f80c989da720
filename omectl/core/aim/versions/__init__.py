"""AIM's two API versions: upstream's v1alpha1 and omectl's v1alpha2, converted losslessly both ways
(docs/aim-versions.md). Pure functions over plain dicts; `omectl.webhook.conversion` answers ConversionReviews with
them.

- `engine`: field rules and the annotations that carry what the other version cannot hold.
- `artifact`, `model_source`, `model`, `service`: the rules of each kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.versions.artifact import ARTIFACT
from omectl.core.aim.versions.engine import (
    GROUP,
    VERSIONS,
    KindConversion,
    carried_annotation,
    written_in_v1alpha1,
)
from omectl.core.aim.versions.model import CLUSTER_MODEL, MODEL
from omectl.core.aim.versions.model_source import CLUSTER_MODEL_SOURCE
from omectl.core.aim.versions.service import SERVICE

__all__ = [
    "CONVERSIONS",
    "GROUP",
    "VERSIONS",
    "ConversionError",
    "carried_annotation",
    "convert",
    "written_in_v1alpha1",
]

CONVERSIONS: Final[Mapping[str, KindConversion]] = {
    c.kind: c for c in (ARTIFACT, CLUSTER_MODEL_SOURCE, MODEL, CLUSTER_MODEL, SERVICE)
}
"""The kinds served at both versions, by kind."""


class ConversionError(ValueError):
    """An object that cannot be converted: not of a converted kind, or not to one of the two versions."""


def convert(obj: Mapping[str, Any], desired_api_version: str) -> dict[str, Any]:
    """`obj` converted to `desired_api_version` (`aim.eai.amd.com/v1alpha1` or `/v1alpha2`)."""
    group, _, version = desired_api_version.rpartition("/")
    kind = obj.get("kind")
    conversion = CONVERSIONS.get(kind) if isinstance(kind, str) else None
    if conversion is None:
        raise ConversionError(f"omectl converts no {kind!r} objects (it converts {', '.join(sorted(CONVERSIONS))})")
    source_group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    if group != GROUP or version not in VERSIONS or source_group != GROUP:
        raise ConversionError(
            f"{kind} converts between {' and '.join(f'{GROUP}/{v}' for v in VERSIONS)}, "
            f"not from {obj.get('apiVersion')!r} to {desired_api_version!r}"
        )
    try:
        return conversion.convert(obj, version)
    except ValueError as exc:
        raise ConversionError(str(exc)) from exc
