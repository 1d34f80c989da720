"""Upstream's template-cache scenarios of a service's caching mode, ported at the level of the decisions they assert
(omectl/core/aim/legacy/service_caches.py, template_caches.py): upstream's pinned services (tests/fixtures/upstream/
aim, SOURCE) as the controller reads them (stored in v1alpha2), a Ready template with one model source standing in
for the one each selects (its name is what the scenarios' scripts read from `status.resolvedTemplate`).

- aimtemplatecache/service-legacy-mode-mapping: the cache of a service caching `Always` or `Auto` is Shared, of one
  caching `Never` Dedicated.
- aimtemplatecache/service-dedicated-creates-own-cache: a Dedicated service beside a Shared service's cache of the
  same template makes its own, Dedicated and owned by it.
- aimtemplatecache/service-shared-ignores-dedicated-cache: a Shared service beside a Dedicated service's cache of the
  same template makes a Shared one.
- aimtemplatecache/shared-ignores-dedicated-artifacts: the artifacts a Shared cache makes are nobody's.

The chainsaw steps' `status.cache.templateCacheRef` (written once a cache is Ready) is shown end to end for both modes
by tests/e2e/test_aim_service_caching.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from omectl.core.aim.legacy.service_caches import find_template_cache, render_template_cache
from omectl.core.aim.legacy.template_caches import match_artifacts, render_artifact
from omectl.core.aim.versions import convert

SCENARIOS = Path(__file__).resolve().parents[3] / "fixtures" / "upstream" / "aim" / "tests" / "e2e" / "aimtemplatecache"
V2 = "aim.eai.amd.com/v1alpha2"
NS = "chainsaw-ns"
TEMPLATE = "aim-dummy-template"
SOURCE = {"modelId": "HuggingFaceTB/SmolLM2-135M", "sourceUri": "hf://HuggingFaceTB/SmolLM2-135M", "size": "1Gi"}


def stored(doc: dict[str, Any], uid: str) -> dict[str, Any]:
    """Upstream's service as applied in the scenario's namespace and read by the controller (v1alpha2)."""
    meta = {**doc["metadata"], "namespace": NS, "uid": uid}
    return convert({**doc, "metadata": meta}, V2)


def pinned(path: str, uid: str) -> dict[str, Any]:
    return stored(yaml.safe_load((SCENARIOS / path).read_text()), uid)


def follow_up(name: str, mode: str) -> dict[str, Any]:
    """The service a scenario's script applies after its seed (`template.name` the seed's resolved template)."""
    script = next(
        step["try"][0]["script"]["content"]
        for step in yaml.safe_load((SCENARIOS / scenario_of(name) / "chainsaw-test.yaml").read_text())["spec"]["steps"]
        if step["name"].startswith("Create") and "script" in step["try"][0]
    )
    manifest = script.split("<<EOF | kubectl", 1)[1].split("\n", 1)[1].rsplit("EOF", 1)[0]
    doc = yaml.safe_load(manifest.replace("${TEMPLATE_NAME}", TEMPLATE))
    assert (doc["metadata"]["name"], doc["spec"]["caching"]["mode"]) == (name, mode)
    return stored(doc, f"{name}-uid")


def scenario_of(service: str) -> str:
    return {
        "dedicated-followup-service": "service-dedicated-creates-own-cache",
        "shared-followup-service": "service-shared-ignores-dedicated-cache",
    }[service]


def template() -> dict[str, Any]:
    meta = {"name": TEMPLATE, "namespace": NS}
    status = {"status": "Ready", "modelSources": [SOURCE]}
    return {"kind": "AIMServiceTemplate", "metadata": meta, "spec": {"modelName": "m"}, "status": status}


def made(service: dict[str, Any]) -> dict[str, Any]:
    """The cache the service makes, as stored (Ready, with a uid)."""
    cache = render_template_cache(service, template(), {})
    assert cache is not None
    cache["metadata"]["uid"] = f"{cache['metadata']['name']}-uid"
    return {**cache, "status": {"status": "Ready"}}


@pytest.mark.parametrize(
    ("file", "mode"),
    [("service-always.yaml", "Shared"), ("service-auto.yaml", "Shared"), ("service-never.yaml", "Dedicated")],
)
def test_upstreams_legacy_mode_mapping_scenario_maps_always_and_auto_to_shared_and_never_to_dedicated(
    file: str, mode: str
) -> None:
    service = pinned(f"service-legacy-mode-mapping/{file}", "uid-1")
    cache = made(service)
    assert cache["spec"]["mode"] == mode
    owners = [(o["kind"], o["name"]) for o in cache["metadata"].get("ownerReferences", [])]
    assert owners == ([("AIMService", service["metadata"]["name"])] if mode == "Dedicated" else [])


def test_upstreams_dedicated_creates_own_cache_scenario_does_not_reuse_the_shared_seeds_cache() -> None:
    seed = pinned("service-dedicated-creates-own-cache/seed-service.yaml", "seed-uid")
    shared = made(seed)
    assert shared["spec"]["mode"] == "Shared"
    dedicated = follow_up("dedicated-followup-service", "Dedicated")
    assert find_template_cache(dedicated, TEMPLATE, [shared]) is None, "the seed's Shared cache is not its own"
    own = made(dedicated)
    assert own["metadata"]["name"] != shared["metadata"]["name"]
    assert own["spec"]["mode"] == "Dedicated"
    assert own["metadata"]["ownerReferences"][0]["name"] == "dedicated-followup-service"
    assert find_template_cache(dedicated, TEMPLATE, [shared, own]) == own


def test_upstreams_shared_ignores_dedicated_cache_scenario_makes_a_shared_cache_beside_the_seeds() -> None:
    seed = pinned("service-shared-ignores-dedicated-cache/seed-service.yaml", "seed-uid")
    dedicated = made(seed)
    assert dedicated["spec"]["mode"] == "Dedicated"
    shared_service = follow_up("shared-followup-service", "Shared")
    assert find_template_cache(shared_service, TEMPLATE, [dedicated]) is None, "a Dedicated cache is its service's"
    shared = made(shared_service)
    assert shared["metadata"]["name"] != dedicated["metadata"]["name"]
    assert shared["spec"]["mode"] == "Shared"
    assert find_template_cache(shared_service, TEMPLATE, [dedicated, shared]) == shared


def test_upstreams_shared_ignores_dedicated_artifacts_scenario_makes_unowned_artifacts_and_uses_no_owned_one() -> None:
    cache = made(pinned("shared-ignores-dedicated-artifacts/service.yaml", "svc-uid"))
    artifact = render_artifact(cache, SOURCE, 0, "AIMServiceTemplate", {})
    assert artifact["metadata"]["labels"]["aim.eai.amd.com/template-cache.name"] == cache["metadata"]["name"]
    assert "ownerReferences" not in artifact["metadata"], "a Shared cache's artifacts are nobody's"
    owned = {**artifact, "metadata": {**artifact["metadata"], "name": "owned"}, "status": {"status": "Ready"}}
    owned["metadata"]["ownerReferences"] = [{"kind": "AIMTemplateCache", "name": "other", "uid": "other-uid"}]
    assert match_artifacts(cache, [SOURCE], [owned]) == [None], "a Dedicated cache's artifact is not used"
