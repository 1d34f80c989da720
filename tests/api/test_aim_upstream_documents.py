"""Upstream AIM Engine's own documents (tests/fixtures/upstream/aim, commit in its SOURCE) read by our typed models
without losing a field: the models drop unknown fields, so a field upstream has and ours lacks would vanish here."""

from __future__ import annotations

from pathlib import Path

import yaml

from omectl.api import aim

UPSTREAM = Path(__file__).resolve().parents[1] / "fixtures" / "upstream" / "aim"


def test_the_helm_values_example_is_a_runtime_config_spec_field_for_field() -> None:
    example = yaml.safe_load((UPSTREAM / "helm" / "clusterruntimeconfig-values-example.yaml").read_text())
    assert example["kind"] == "AIMClusterRuntimeConfig"
    assert aim.RuntimeConfigSpec.model_validate(example["spec"]).to_dict() == example["spec"]
    assert aim.AIMClusterRuntimeConfig.model_validate(example).to_dict()["spec"]["model"] == {"autoDiscovery": True}
