"""What the simulated model agent knows about models: the fields upstream's model agent reads from a model's
config.json (`pkg/modelagent/config_parser.go`) and writes into the BaseModel / ClusterBaseModel **spec**.

Upstream's agent downloads the model and parses its Hugging Face config; the simulator downloads nothing, so it
looks the model up in a small table keyed by `spec.storage.storageUri` (then by the model's name). As upstream's
`updateModelSpec`, it fills only fields the spec leaves unset, so a field written in the YAML always wins; a
`SimulatorConfig(model_metadata=...)` entry (same keys) replaces a built-in one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final


@dataclass(frozen=True)
class ModelMetadata:
    """A model's config.json facts, as upstream's agent turns them into spec fields."""

    architecture: str
    """`architectures[0]` of config.json (or the diffusers pipeline class), e.g. LlamaForCausalLM."""
    parameter_size: str | None = None
    """Parameter count as upstream formats it, e.g. 3.21B."""
    model_type: str | None = None
    framework_version: str | None = None
    """`transformers_version` (or the diffusers version for a diffusion model)."""
    quantization: str | None = None
    max_tokens: int | None = None
    diffusers: bool = False
    """A diffusion pipeline: format and framework `diffusers` at `framework_version` (safetensors 1.0.0 and
    transformers otherwise, as upstream)."""

    def spec_fields(self) -> dict[str, Any]:
        """The spec fields upstream's agent would write for this model."""
        framework: dict[str, Any] = {"name": "diffusers" if self.diffusers else "transformers"}
        if self.framework_version:
            framework["version"] = self.framework_version
        model_format = (
            {"name": "diffusers", "version": self.framework_version}
            if self.diffusers
            else {"name": "safetensors", "version": "1.0.0"}
        )
        fields: dict[str, Any] = {
            "modelFormat": model_format,
            "modelFramework": framework,
            "modelArchitecture": self.architecture,
            "modelType": self.model_type,
            "modelParameterSize": self.parameter_size,
            "quantization": self.quantization,
            "maxTokens": self.max_tokens,
        }
        return {key: value for key, value in fields.items() if value is not None}


def _llm(architecture: str, size: str, model_type: str, transformers: str, max_tokens: int, **kw: Any) -> ModelMetadata:
    return ModelMetadata(architecture, size, model_type, transformers, max_tokens=max_tokens, **kw)


BUILTIN_MODELS: Final[Mapping[str, ModelMetadata]] = {
    "hf://meta-llama/Llama-3.2-1B-Instruct": _llm("LlamaForCausalLM", "1.24B", "llama", "4.45.0.dev0", 131072),
    "hf://meta-llama/Llama-3.2-3B-Instruct": _llm("LlamaForCausalLM", "3.21B", "llama", "4.45.0.dev0", 131072),
    "hf://Qwen/Qwen3-0.6B": _llm("Qwen3ForCausalLM", "751.63M", "qwen3", "4.51.0", 40960),
    "hf://google/gemma-3-4b-it": _llm("Gemma3ForConditionalGeneration", "4.30B", "gemma3", "4.50.0.dev0", 131072),
    "hf://mistralai/Mixtral-8x7B-Instruct-v0.1": _llm("MixtralForCausalLM", "46.70B", "mixtral", "4.36.0.dev0", 32768),
    "hf://intfloat/e5-mistral-7b-instruct": _llm("MistralModel", "7.11B", "mistral", "4.34.0", 32768),
    "hf://deepseek-ai/DeepSeek-V3": _llm(
        "DeepseekV3ForCausalLM", "671.03B", "deepseek_v3", "4.33.1", 163840, quantization="fp8"
    ),
    "hf://deepseek-ai/DeepSeek-R1": _llm(
        "DeepseekV3ForCausalLM", "671.03B", "deepseek_v3", "4.46.3", 163840, quantization="fp8"
    ),
    "hf://moonshotai/Kimi-K2-Instruct": _llm(
        "DeepseekV3ForCausalLM", "1.03T", "kimi_k2", "4.48.3", 131072, quantization="fp8"
    ),
    "hf://Qwen/Qwen-Image": ModelMetadata("QwenImagePipeline", framework_version="0.34.0.dev0", diffusers=True),
}
"""Facts from each model's published config.json, keyed by the storage URI upstream's ClusterBaseModels use."""


def metadata_for(model: Mapping[str, Any], overrides: Mapping[str, ModelMetadata]) -> ModelMetadata | None:
    """The table entry for a BaseModel / ClusterBaseModel: by storage URI, then by name; overrides first."""
    spec = model.get("spec") or {}
    keys = [(spec.get("storage") or {}).get("storageUri"), (model.get("metadata") or {}).get("name")]
    for table in (overrides, BUILTIN_MODELS):
        for key in keys:
            if isinstance(key, str) and key in table:
                return table[key]
    return None


def filled_spec(spec: Mapping[str, Any], metadata: ModelMetadata) -> dict[str, Any] | None:
    """`spec` with the fields it leaves unset filled from `metadata`; None when nothing is missing.
    A `modelFormat` without a name counts as unset (upstream replaces it whole)."""
    missing = {
        key: value
        for key, value in metadata.spec_fields().items()
        if spec.get(key) in (None, "", [], {}) or (key == "modelFormat" and not (spec.get(key) or {}).get("name"))
    }
    return {**spec, **missing} if missing else None
