"""What a simulated AIM image prints for `dry-run --format=json`, the command of a service template's discovery Job
(`omectl.core.aim.legacy.discovery`): the simulated node writes it into the Job's result ConfigMap, as the discovery
container does, when the Job carries no `sim.omectl.io/discovery-result` of its own (that annotation wins).

The image is looked up among the simulated registry's images (`omectl.sim.registry.SIMULATED_IMAGES`) by its
repository and tag, whatever registry host names it (the registry is mirrored for every host). Its output: the
profiles of the image's `dry_run` that the container's env does not contradict, as the AIM runtime selects them:
`AIM_PROFILE_ID` (the profile's `id`), `AIM_METRIC`, `AIM_PRECISION`, `AIM_GPU_MODEL` and `AIM_GPU_COUNT` (its
`profile.metadata` `metric`, `precision`, `gpu`, `gpu_count`); none matching prints `[]`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from omectl.sim.registry import SIMULATED_IMAGES, SimulatedImage
from omectl.sim.simulator.images import qualified_reference

DRY_RUN_ARG: Final = "dry-run"
_SELECTORS: Final = (("AIM_METRIC", "metric"), ("AIM_PRECISION", "precision"), ("AIM_GPU_MODEL", "gpu"))


def dry_run_output(job: Mapping[str, Any], images: Iterable[SimulatedImage] = SIMULATED_IMAGES) -> str | None:
    """The JSON the Job's container prints, or None when it runs no dry run of a simulated image."""
    pod = ((job.get("spec") or {}).get("template") or {}).get("spec") or {}
    containers = pod.get("containers") or []
    if not containers:
        return None
    container = containers[0]
    args = container.get("args") or []
    if not args or args[0] != DRY_RUN_ARG or not isinstance(container.get("image"), str):
        return None
    image = _image(container["image"], images)
    if image is None or not image.dry_run:
        return None
    env = {e["name"]: e.get("value", "") for e in container.get("env") or [] if isinstance(e, Mapping)}
    return json.dumps([dict(p) for p in image.dry_run if _selected(p, env)])


def _image(reference: str, images: Iterable[SimulatedImage]) -> SimulatedImage | None:
    path = qualified_reference(reference).split("/", 1)[1]
    return next((i for i in images if path == f"{i.repository}:{i.tag}"), None)


def _selected(profile: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    metadata = (profile.get("profile") or {}).get("metadata") or {}
    if env.get("AIM_PROFILE_ID") and env["AIM_PROFILE_ID"] != profile.get("id"):
        return False
    for variable, key in _SELECTORS:
        if env.get(variable) and str(metadata.get(key, "")).lower() != env[variable].lower():
            return False
    count = env.get("AIM_GPU_COUNT")
    return not count or str(metadata.get("gpu_count")) == count
