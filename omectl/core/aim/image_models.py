"""The AIMModel an AIMService written in v1alpha1 creates for its `spec.model.image` when no model has that image
(docs/aim-versions.md, "What a v1alpha1 service gets reconciled"), as upstream's aimservice controller creates it,
with the spec's label-propagation edge "AIMService -> auto-created AIMModel (v1alpha1 image path)".

- **When** (`image_to_create`): the service names an image (not a name), was written in v1alpha1
  (`versions.written_in_v1alpha1`, whatever fields it holds: a v1alpha2 service by image is rendered from the image
  and makes no model), and no AIMModel of its namespace nor AIMClusterModel has that image
  (`service_models.resolve_model` found none).
- **Its name** (`generated_model_name`), upstream's: the image's name and tag (a digest: its first six hex digits;
  none: `latest`), each lower-cased with every run of other characters than `a-z0-9-` one `-`, joined by `-`, then
  `-` and the first 8 hex digits of the SHA-256 of the image as a JSON string; the longest part is shortened until
  the whole fits 63 characters. An image reference without a name or with an empty tag or digest is invalid
  (`ValueError`; the service fails with `InvalidImageReference`).
- **The object** (`render_image_model`): an AIMModel in the service's namespace, written as upstream writes its
  v1alpha1 model (`spec.image`, the service's `runtimeConfigName`, `imagePullSecrets` and `serviceAccountName`,
  empty `resources`) and stored at v1alpha2 (`versions.convert`), labelled `aim.eai.amd.com/origin:
  auto-generated`, with no owner reference: services with the same image share it (the next one finds it by its
  image), and it outlives them, as upstream's does. The service's labels matching the runtime config's
  `labelPropagation.match` are copied onto it when it is created (it is never written again).
- **The service meanwhile**: component `Model` Pending / `CreatingModel`, `Model will be created for image
  <image>` (upstream's); the model's creation queues the service, which then resolves it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.legacy.kinds import propagate_legacy_edge
from omectl.core.aim.meta import namespace_of
from omectl.core.aim.status import MODEL, Component
from omectl.core.aim.versions import convert
from omectl.core.aim.versions.engine import V1ALPHA1, V1ALPHA2, written_in_v1alpha1
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_mapping

ORIGIN_LABEL: Final = "aim.eai.amd.com/origin"
AUTO_GENERATED: Final = "auto-generated"
CREATING_MODEL: Final = "CreatingModel"
INVALID_IMAGE_REFERENCE: Final = "InvalidImageReference"
MAX_NAME: Final = 63
HASH_LENGTH: Final = 8
_GROUP: Final = "aim.eai.amd.com"
_NOT_NAME: Final = re.compile(r"[^a-z0-9-]+")
_DASHES: Final = re.compile(r"-+")


def image_to_create(service: Mapping[str, Any]) -> str | None:
    """The image (trimmed) a model is to be created for, when the service names one and was written in v1alpha1;
    the caller has found no model with it."""
    model = as_mapping(as_mapping(service.get("spec")).get("model"))
    if isinstance(model.get("name"), str) and model["name"].strip():
        return None
    image = model.get("image")
    if not isinstance(image, str) or not image.strip() or not written_in_v1alpha1(service):
        return None
    return image.strip()


def generated_model_name(image: str) -> str:
    """Upstream's name for the model of `image` (module docstring); ValueError for an invalid reference."""
    name, tag = _name_and_tag(image)
    parts = [_rfc1123(name) or "part", _rfc1123(tag) or "part"]
    digest = hashlib.sha256(json.dumps(image).encode()).hexdigest()[:HASH_LENGTH]
    while sum(len(p) + 1 for p in parts) + len(digest) > MAX_NAME:
        longest = max(range(len(parts)), key=lambda i: (len(parts[i]), -i))
        if len(parts[longest]) <= 1:
            break
        parts[longest] = parts[longest][:-1].rstrip("-")
    return "-".join([*parts, digest])


def render_image_model(service: Mapping[str, Any], image: str, name: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """The AIMModel (v1alpha2, as stored) the service creates for `image`, its labels propagated."""
    v1 = v1alpha1_spec(service)
    spec: dict[str, Any] = {"image": image, "resources": {}}
    runtime_config = as_mapping(service.get("spec")).get("runtimeConfigName")
    if isinstance(runtime_config, str) and runtime_config:
        spec["runtimeConfigName"] = runtime_config
    for key in ("imagePullSecrets", "serviceAccountName"):
        if v1.get(key):
            spec[key] = v1[key]
    model = {
        "apiVersion": f"{_GROUP}/{V1ALPHA1}",
        "kind": "AIMModel",
        "metadata": {"name": name, "namespace": namespace_of(service), "labels": {ORIGIN_LABEL: AUTO_GENERATED}},
        "spec": spec,
    }
    return propagate_legacy_edge(service, convert(model, f"{_GROUP}/{V1ALPHA2}"), config)


def creating_component(image: str) -> Component:
    return Component(MODEL, "Pending", CREATING_MODEL, f"Model will be created for image {image}")


def invalid_image_component(image: str, error: ValueError) -> Component:
    return Component(MODEL, "Failed", INVALID_IMAGE_REFERENCE, f'invalid image URI "{image}": {error}')


def _name_and_tag(image: str) -> tuple[str, str]:
    """The last path component's name and its tag (a digest's first six hex digits; `latest` without either)."""
    if not image:
        raise ValueError("image reference is empty")
    first, slash, rest = image.partition("/")
    repository = rest if slash and first and ("." in first or ":" in first or first == "localhost") else image
    last = repository.split("/")[-1]
    if "@" in last:
        name, _, digest = last.partition("@")
        _, colon, hexdigits = digest.partition(":")
        if not digest:
            raise ValueError(f"malformed digest reference: {image}")
        if not colon:
            raise ValueError(f"malformed digest (missing colon): {digest}")
        if not hexdigits:
            raise ValueError(f"malformed digest (no hash after colon): {digest}")
        tag = hexdigits[:6]
    elif ":" in last:
        name, _, tag = last.partition(":")
        if not tag:
            raise ValueError(f"malformed tag reference (empty tag): {image}")
    else:
        name, tag = last, "latest"
    name, tag = _component(name), _component(tag)
    if not name:
        raise ValueError("image name is empty after sanitization")
    if not tag:
        raise ValueError("image tag is empty after sanitization")
    return name, tag


def _component(text: str) -> str:
    return _DASHES.sub("-", _NOT_NAME.sub("-", text.lower())).strip("-")


def _rfc1123(text: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", text.lower()).strip("-")[:MAX_NAME].rstrip("-")
