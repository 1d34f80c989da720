"""The simulated model agent's table: what it fills into a model's spec, and what it leaves alone."""

from __future__ import annotations

from omectl.sim.simulator.models import BUILTIN_MODELS, ModelMetadata, filled_spec, metadata_for


def model(name: str, uri: str, **spec: object) -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"storage": {"storageUri": uri}, **spec}}


def test_the_storage_uri_finds_the_entry_and_unset_fields_are_filled() -> None:
    meta = metadata_for(model("anything", "hf://meta-llama/Llama-3.2-3B-Instruct"), {})
    assert meta is BUILTIN_MODELS["hf://meta-llama/Llama-3.2-3B-Instruct"]
    spec = filled_spec({"storage": {"storageUri": "x"}, "modelCapabilities": ["TEXT_TO_TEXT"]}, meta)
    assert spec is not None
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}
    assert spec["modelFramework"] == {"name": "transformers", "version": "4.45.0.dev0"}
    assert spec["modelArchitecture"] == "LlamaForCausalLM"
    assert spec["modelParameterSize"] == "3.21B"
    assert spec["modelCapabilities"] == ["TEXT_TO_TEXT"]


def test_fields_the_yaml_sets_win_and_a_complete_spec_is_left_alone() -> None:
    meta = ModelMetadata("LlamaForCausalLM", "3B", "llama", "4.45.0")
    spec = filled_spec({"modelArchitecture": "Custom", "modelFormat": {"name": ""}}, meta)
    assert spec is not None
    assert spec["modelArchitecture"] == "Custom"
    assert spec["modelFormat"] == {"name": "safetensors", "version": "1.0.0"}  # a nameless format counts as unset
    assert filled_spec(spec, meta) is None


def test_an_override_by_name_beats_the_builtin_entry_and_unknown_models_get_nothing() -> None:
    mine = ModelMetadata("MyArch")
    assert metadata_for(model("m", "hf://meta-llama/Llama-3.2-3B-Instruct"), {"m": mine}) is mine
    assert metadata_for(model("m", "hf://nobody/unknown"), {}) is None


def test_a_diffusion_pipeline_gets_diffusers_format_and_framework() -> None:
    fields = BUILTIN_MODELS["hf://Qwen/Qwen-Image"].spec_fields()
    assert fields["modelFormat"] == fields["modelFramework"] == {"name": "diffusers", "version": "0.34.0.dev0"}
    assert fields["modelArchitecture"] == "QwenImagePipeline"
