"""AIMProfileSet → derived AIMProfiles, and the status of profiles and profile sets (docs/aim-resources.md).

A profile set's entries without `profileRef` are derived (`derive_profiles`): one AIMProfile per entry, named
`<set>-<entry name>` (at most 63 characters), in the set's namespace, `spec.modelName` and `spec.runtimeConfigName`
from the set, the entry's `profileId`, `gpu`, `gpuCount`, `precision`, `metric`, `containerEnv`, `engineEnv`,
`modelSources`. Labels `app.kubernetes.io/component: profile`, `aim.eai.amd.com/profile-set`,
`aim.eai.amd.com/model`, and the set's labels propagated with the set's config. Owned by the set. An entry with a
`profileRef` records a profile that exists already (a model's discovery result) and derives nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from omectl.core.aim.consumers import (
    AIM_V1ALPHA2,
    MODEL_LABEL,
    PROFILE,
    PROFILE_SET_LABEL,
    base_labels,
    bounded_name,
    dns_label,
    owner_reference,
    propagate_edge,
    spec_of,
    text,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.layering import copy_json

DERIVED_FIELDS: Final = (
    "profileId",
    "gpu",
    "gpuCount",
    "precision",
    "metric",
    "containerEnv",
    "engineEnv",
    "modelSources",
)


def derived_profile_name(profile_set: Mapping[str, Any], entry_name: str) -> str:
    return bounded_name(f"{name_of(profile_set)}-{dns_label(entry_name)}")


def derive_profiles(profile_set: Mapping[str, Any], config: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The AIMProfiles derived from the set's entries without `profileRef` (module docstring). `config` is the set's
    resolved runtime config (for label propagation)."""
    parent = {**profile_set, "kind": profile_set.get("kind") or "AIMProfileSet"}
    set_spec = spec_of(profile_set)
    model_name = text(set_spec.get("modelName")) or ""
    out: list[dict[str, Any]] = []
    for entry in set_spec.get("profiles") or ():
        if not isinstance(entry, Mapping) or entry.get("profileRef") or not text(entry.get("name")):
            continue
        spec: dict[str, Any] = {"modelName": model_name}
        config_name = text(set_spec.get("runtimeConfigName"))
        if config_name is not None:
            spec["runtimeConfigName"] = config_name
        for field in DERIVED_FIELDS:
            if entry.get(field) not in (None, "", []):
                spec[field] = copy_json(entry[field])
        profile = {
            "apiVersion": AIM_V1ALPHA2,
            "kind": PROFILE,
            "metadata": {
                "name": derived_profile_name(profile_set, str(entry["name"])),
                "namespace": namespace_of(profile_set),
                "labels": base_labels("profile", {PROFILE_SET_LABEL: name_of(profile_set), MODEL_LABEL: model_name}),
                "ownerReferences": [owner_reference(parent)],
            },
            "spec": spec,
        }
        out.append(propagate_edge(parent, profile, config or {}))
    return out


def profile_set_status(profile_set: Mapping[str, Any]) -> dict[str, Any]:
    """The set's own status: Ready with `profileCount` = its entries (the runtime-config part is laid over it by
    `consumer_status`)."""
    count = sum(1 for e in spec_of(profile_set).get("profiles") or () if isinstance(e, Mapping))
    message = f"{count} profiles"
    return {
        "status": "Ready",
        "profileCount": count,
        "conditions": [{"type": "Ready", "status": "True", "reason": "ProfilesReady", "message": message}],
    }


def profile_status(profile: Mapping[str, Any]) -> dict[str, Any]:
    """A profile's own status: Ready (it is configuration; a missing explicit runtime config fails it through
    `consumer_status`)."""
    return {
        "status": "Ready",
        "conditions": [{"type": "Ready", "status": "True", "reason": "ProfileReady", "message": "Profile is ready"}],
    }
