"""An AIM image's OCI config labels read as upstream's `ImageMetadata` (docs/aim-resources.md, "Templates of a
model"): `oci` from the `org.opencontainers.image.*` labels, `model` from the AMD labels (`com.amd.aim.<key>`, else the
older `org.amd.silogen.<key>`), and `originalLabels` all of them. Lists (`model.tags`, `model.versions`,
`model.variants`) are comma-separated; `hfToken.required` is a boolean (ignored when it is not one);
`model.recommendedDeployments` is a JSON array of deployments, also accepted as objects separated by commas or with
Python's single quotes, as upstream normalises it. Empty values are left out, as upstream's `omitempty` leaves them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

OCI_LABELS: Final = {
    field: f"org.opencontainers.image.{field}"
    for field in (
        "title",
        "description",
        "licenses",
        "vendor",
        "authors",
        "source",
        "documentation",
        "created",
        "revision",
        "version",
    )
}
MODEL_TEXT_LABELS: Final = {
    "canonicalName": "model.canonicalName",
    "source": "model.source",
    "title": "title",
    "descriptionFull": "description.full",
    "releaseNotes": "release.notes",
}
MODEL_LIST_LABELS: Final = {"tags": "model.tags", "versions": "model.versions", "variants": "model.variants"}
LABEL_PREFIXES: Final = ("com.amd.aim.", "org.amd.silogen.")
DEPLOYMENT_TEXT_FIELDS: Final = ("gpuModel", "precision", "metric", "profileId", "description")
"""Upstream's `RecommendedDeployment` holds these and `gpuCount` (an integer)."""
_TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
"""What Go's strconv.ParseBool reads as true."""


def amd_label(labels: Mapping[str, str], key: str) -> str:
    """The first non-empty of `com.amd.aim.<key>` and `org.amd.silogen.<key>` ("" when neither)."""
    for prefix in LABEL_PREFIXES:
        value = labels.get(prefix + key)
        if value:
            return value
    return ""


def parse_image_labels(labels: Mapping[str, str]) -> dict[str, Any]:
    """The image's `ImageMetadata` (module docstring). Raises ValueError when its recommended deployments do not
    parse, as upstream fails the image then."""
    oci = {field: labels[key] for field, key in OCI_LABELS.items() if labels.get(key)}
    model: dict[str, Any] = {}
    for field, key in MODEL_TEXT_LABELS.items():
        if value := amd_label(labels, key):
            model[field] = value
    for field, key in MODEL_LIST_LABELS.items():
        if items := [part.strip() for part in amd_label(labels, key).split(",") if part.strip()]:
            model[field] = items
    if amd_label(labels, "hfToken.required") in _TRUE:
        model["hfTokenRequired"] = True
    deployments = amd_label(labels, "model.recommendedDeployments")
    if deployments and (parsed := parse_recommended_deployments(deployments)):
        model["recommendedDeployments"] = parsed
    out: dict[str, Any] = {"oci": oci, "model": model}
    if labels:
        out["originalLabels"] = dict(labels)
    return out


def parse_recommended_deployments(value: str) -> list[dict[str, Any]]:
    """The deployments of `model.recommendedDeployments` (module docstring): each with upstream's fields only."""
    normalized = value.strip().replace("'", '"')
    if not normalized.startswith("["):
        normalized = f"[{normalized}]"
    try:
        parsed = json.loads(normalized)
    except ValueError as error:
        raise ValueError(f"failed to parse recommended deployments: {error}") from error
    if not isinstance(parsed, list) or not all(isinstance(item, Mapping) for item in parsed):
        raise ValueError("failed to parse recommended deployments: not a JSON array of objects")
    out = []
    for item in parsed:
        count = item.get("gpuCount")
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)):
            raise ValueError(f"failed to parse recommended deployments: gpuCount {count!r} is not an integer")
        for field in DEPLOYMENT_TEXT_FIELDS:
            if item.get(field) is not None and not isinstance(item[field], str):
                raise ValueError(f"failed to parse recommended deployments: {field} {item[field]!r} is not a string")
        deployment = {f: item[f] for f in DEPLOYMENT_TEXT_FIELDS if item.get(f)}
        if count:
            deployment["gpuCount"] = count
        out.append(deployment)
    return out
