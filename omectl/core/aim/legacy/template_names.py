"""The names upstream's model controller gives the AIMServiceTemplates it creates (docs/aim-resources.md, "Templates
of a model"), so that omectl names a model's templates as upstream does for the same model.

A derived name (`derived_name`) is name parts and a hash suffix: each part lowercased, every character outside
`[a-z0-9-]` made a `-`, trimmed of `-` at both ends and cut to 63 characters (an empty part becomes `part`); the
suffix is the first characters of the SHA-256 hex digest of the hash inputs, each written as Go's `encoding/json`
writes it and joined by `|`. While `<part>-<part>-...-<suffix>` is longer than 63 characters, the longest part (the
first of equal ones) loses its last character and any `-` it then ends in.

- A template for a recommended deployment of the image (`template_name`): the parts are the image reference and
  the deployment's suffix, `<count>x-<gpu>` (or `<gpu>`, or `x<count>`), the metric (`lat` for latency, `thr` for
  throughput, else as it is) and the precision, joined by `-`; the hash (4 characters) is of one string,
  `<model>-<image>[-<gpu>][-x<count>][-<metric>][-<precision>]`, so two models of one image get distinct names.
- A custom template (`custom_template_name`): the parts are the model, `custom`, and the template's name, profile
  precision and GPU model where given; the hash (8 characters) is of the model, the template's index, and the
  template's name, (profile precision and metric when it has a profile) and (GPU requests and model when it has a
  GPU). The model's one template when it names none (`custom_template_name(model, None, 0)`) hashes the model and 0.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

MAX_NAME: Final = 63
METRIC_SHORTHAND: Final[Mapping[str, str]] = {"latency": "lat", "throughput": "thr"}
_INVALID: Final = re.compile(r"[^a-z0-9-]")
_GO_JSON_ESCAPES: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def rfc1123_part(text: str) -> str:
    """One name part made DNS-compliant as upstream makes it (module docstring)."""
    out = _INVALID.sub("-", text.lower()).strip("-")
    return out[:MAX_NAME].rstrip("-")


def go_json(value: Any) -> str:
    """`value` (a string, an integer or None) as Go's `encoding/json` marshals it: HTML-safe escapes, UTF-8 as is."""
    if isinstance(value, bool) or (value is not None and not isinstance(value, str | int)):
        raise TypeError(f"go_json takes a string, an integer or None, not {type(value).__name__}")
    text = json.dumps(value, ensure_ascii=False)
    return "".join(_GO_JSON_ESCAPES.get(char, char) for char in text)


def hash_of(inputs: Sequence[Any]) -> str:
    """The SHA-256 hex digest of the inputs as upstream hashes them (module docstring)."""
    return hashlib.sha256("|".join(go_json(value) for value in inputs).encode()).hexdigest()


def derived_name(parts: Sequence[str], hash_inputs: Sequence[Any], hash_length: int) -> str:
    """Name parts and a hash suffix within 63 characters (module docstring)."""
    sanitized = [rfc1123_part(part) or "part" for part in parts]
    suffix = hash_of(hash_inputs)[:hash_length] if hash_length > 0 and hash_inputs else ""

    def length() -> int:
        return sum(len(part) + 1 for part in sanitized) + (len(suffix) if suffix else -1)

    while length() > MAX_NAME:
        longest = max(range(len(sanitized)), key=lambda index: (len(sanitized[index]), -index))
        if len(sanitized[longest]) <= 1:
            break
        sanitized[longest] = sanitized[longest][:-1].rstrip("-")
    name = "-".join(sanitized)
    return f"{name}-{suffix}" if suffix else name


def template_name(model: str, image: str, deployment: Mapping[str, Any]) -> str:
    """The name of the template a model makes for one of its image's recommended deployments (`gpuModel`,
    `gpuCount`, `metric`, `precision`; module docstring)."""
    gpu = _text(deployment.get("gpuModel"))
    count = _count(deployment.get("gpuCount"))
    metric = _text(deployment.get("metric"))
    precision = _text(deployment.get("precision"))
    suffix: list[str] = []
    if count > 0 and gpu:
        suffix.append(f"{count}x-{gpu}")
    elif gpu:
        suffix.append(gpu)
    elif count > 0:
        suffix.append(f"x{count}")
    if metric:
        suffix.append(METRIC_SHORTHAND.get(metric, metric))
    if precision:
        suffix.append(precision)
    hashed = f"{model}-{image}"
    if gpu:
        hashed += f"-{gpu}"
    if count > 0:
        hashed += f"-x{count}"
    if metric:
        hashed += f"-{metric}"
    if precision:
        hashed += f"-{precision}"
    return derived_name([image, "-".join(suffix)], [hashed], 4)


def custom_template_name(model: str, template: Mapping[str, Any] | None, index: int) -> str:
    """The name of a model's custom template (`spec.customTemplates[index]`), or of its one template when it names
    none (`template` None; module docstring)."""
    parts = [model, "custom"]
    inputs: list[Any] = [model, index]
    if template is not None:
        name = _text(template.get("name"))
        profile = template.get("profile")
        hardware = template.get("hardware")
        gpu = hardware.get("gpu") if isinstance(hardware, Mapping) else None
        if name:
            parts.append(name)
        if isinstance(profile, Mapping) and _text(profile.get("precision")):
            parts.append(_text(profile.get("precision")))
        if isinstance(gpu, Mapping) and _text(gpu.get("model")):
            parts.append(_text(gpu.get("model")))
        inputs.append(name)
        if isinstance(profile, Mapping):
            inputs += [_text(profile.get("precision")), _text(profile.get("metric"))]
        if isinstance(gpu, Mapping):
            inputs += [_count(gpu.get("requests")), _text(gpu.get("model"))]
    return derived_name(parts, inputs, 8)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
