"""Upstream's automatic template selection for an AIMService that names no template (docs/aim-versions.md, "What a
v1alpha1 service gets reconciled"): among the templates whose `spec.modelName` is the resolved model's name, the
one upstream's aimservice controller would choose.

The candidates are the AIMServiceTemplates of the service's namespace, then the AIMClusterServiceTemplates, each by
name (the order upstream lists them in), but not the templates a service derived for its overrides
(`aim.eai.amd.com/origin: derived`, `legacy.derived_templates`): one is the copy of its base with the overrides
applied, so with its base it would make every choice for those overrides ambiguous (upstream lists them too; its
service keeps its base resolved instead). In order, as upstream filters them:

1. available: `status.status` Ready;
2. optimized (`status.profile.metadata.type`, none counting as unoptimized), unless `spec.template.allowUnoptimized`;
3. matching the service's `spec.overrides` (`metric`, `precision` case-insensitively; `hardware.gpu.model`, when
   both name one, by normalised model; `hardware.gpu.requests`, when both ask for a count);
4. whose GPU (`spec.hardware.gpu.model`, else the profile's `gpu`) some Node has, or that names none;
5. the namespaced ones, when there are any;
6. the most preferred by profile type (optimized, preview, unoptimized), then GPU (MI325X, MI300X, MI250X, MI210),
   then metric (latency, throughput), then precision (fp4, int4, fp8, int8, fp16, bf16, fp32); an unknown value ranks
   after every known one. Two or more candidates equally preferred make the choice ambiguous: none is selected.

Outcomes, as `service_templates.TemplateSelection` (the `Template` component, condition `TemplateReady`; a
selection that finds no template is never a configuration error, the service waits):

- one chosen: as a template named by the service (`template_component`);
- templates exist, none Ready: Pending / `TemplateNotReady`, `Templates exist but are not ready yet` (upstream's);
- none left after the unoptimized filter: Pending / `TemplateNotFound`, `No available templates match requirements
  for model "<model>": <n> unoptimized template(s) filtered out. Set allowUnoptimized to use them.` (n: the
  available ones);
- none left after the override or GPU filter: Pending / `TemplateNotFound`, `No available templates match
  requirements for model "<model>"`;
- ambiguous: Pending / `TemplateSelectionAmbiguous`, `Multiple templates (<n>) satisfy model "<model>"`.

These reasons and messages are the ones upstream's selection computes for each outcome (its controller at the pinned
commit then reports a generic `No template found for service` for all of them; omectl says which).
No template naming the model at all (upstream: `No templates found for model "<model>"`, the service waiting) is
no selection here (`None`): the service is reconciled from its model alone, as a v1alpha2 service is (the two cannot
be told apart once stored; docs/aim-versions.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.aim.legacy.derived_templates import is_derived
from omectl.core.aim.legacy.gpus import normalize_gpu_model
from omectl.core.aim.legacy.kinds import CLUSTER_SERVICE_TEMPLATE, SERVICE_TEMPLATE
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.status import Component
from omectl.core.aim.versions.service import v1alpha1_spec
from omectl.core.jsonish import as_mapping

TEMPLATE: Final = "Template"
TEMPLATE_NOT_FOUND: Final = "TemplateNotFound"
TEMPLATE_NOT_READY: Final = "TemplateNotReady"
TEMPLATE_SELECTION_AMBIGUOUS: Final = "TemplateSelectionAmbiguous"
NOT_READY_MESSAGE: Final = "Templates exist but are not ready yet"

PROFILE_TYPE_ORDER: Final = ("optimized", "preview", "unoptimized")
GPU_ORDER: Final = ("MI325X", "MI300X", "MI250X", "MI210")
METRIC_ORDER: Final = ("latency", "throughput")
PRECISION_ORDER: Final = ("fp4", "int4", "fp8", "int8", "fp16", "bf16", "fp32")

TemplatesForModel = Callable[[str, str, str], Sequence[Mapping[str, Any]]]
"""`(kind, namespace, model name)` → the live templates of that kind (in that namespace; `""` for cluster ones)
whose `spec.modelName` is the model's name."""


@dataclass(frozen=True)
class Candidate:
    kind: str
    template: Mapping[str, Any]

    @property
    def namespaced(self) -> bool:
        return self.kind == SERVICE_TEMPLATE

    @property
    def _spec(self) -> Mapping[str, Any]:
        return as_mapping(self.template.get("spec"))

    @property
    def _profile(self) -> Mapping[str, Any] | None:
        profile = as_mapping(self.template.get("status")).get("profile")
        return as_mapping(as_mapping(profile).get("metadata")) if isinstance(profile, Mapping) else None

    @property
    def _spec_gpu(self) -> Mapping[str, Any]:
        return as_mapping(as_mapping(self._spec.get("hardware")).get("gpu"))

    @property
    def ready(self) -> bool:
        return as_mapping(self.template.get("status")).get("status") == "Ready"

    @property
    def profile_type(self) -> str:
        """The profile's type; "" without a profile (ranked last, filtered as unoptimized)."""
        return _text(self._profile.get("type")) if self._profile is not None else ""

    @property
    def optimized(self) -> bool:
        return self.profile_type == "optimized"

    @property
    def metric(self) -> str:
        return _text((self._profile or {}).get("metric")) or _text(self._spec.get("metric"))

    @property
    def precision(self) -> str:
        return _text((self._profile or {}).get("precision")) or _text(self._spec.get("precision"))

    @property
    def gpu(self) -> str:
        """The spec's GPU model, else the profile's; "" for a template that names none."""
        return _text(self._spec_gpu.get("model")).strip() or _text((self._profile or {}).get("gpu")).strip()

    @property
    def gpu_count(self) -> int:
        for count in (self._spec_gpu.get("requests"), (self._profile or {}).get("gpuCount")):
            if isinstance(count, int) and _positive(count):
                return count
        return 0

    def rank(self) -> tuple[int, int, int, int]:
        return (
            _score(self.profile_type, PROFILE_TYPE_ORDER),
            _score(self.gpu, GPU_ORDER),
            _score(self.metric, METRIC_ORDER),
            _score(self.precision, PRECISION_ORDER),
        )


@dataclass(frozen=True)
class AutoSelection:
    """What the selection found: the chosen candidate, or the `Template` component saying why there is none."""

    chosen: Candidate | None
    component: Component | None
    """None when a candidate was chosen (its own status makes the component)."""


def candidates(service: Mapping[str, Any], model_name: str, templates: TemplatesForModel) -> list[Candidate]:
    """The templates for `model_name` a service may select, in upstream's order: namespaced, then cluster, by name;
    not the derived ones (module docstring)."""
    found: list[Candidate] = []
    for kind, where in ((SERVICE_TEMPLATE, namespace_of(service)), (CLUSTER_SERVICE_TEMPLATE, "")):
        listed = sorted(templates(kind, where, model_name), key=name_of)
        found.extend(Candidate(kind, t) for t in listed if not is_derived(t))
    return found


def auto_select(
    service: Mapping[str, Any], model_name: str, found: Sequence[Candidate], gpu_models: Collection[str]
) -> AutoSelection:
    """Upstream's choice among `found` (non-empty; `candidates`), the GPU models the Nodes have (normalised)."""
    quoted = f'"{model_name}"'
    no_match = Component(
        TEMPLATE, "Pending", TEMPLATE_NOT_FOUND, f"No available templates match requirements for model {quoted}"
    )
    available = [c for c in found if c.ready]
    if not available:
        return AutoSelection(None, Component(TEMPLATE, "Pending", TEMPLATE_NOT_READY, NOT_READY_MESSAGE))
    allowed = [c for c in available if c.optimized or _allow_unoptimized(service)]
    if not allowed:
        message = (
            f"No available templates match requirements for model {quoted}: {len(available)} unoptimized "
            "template(s) filtered out. Set allowUnoptimized to use them."
        )
        return AutoSelection(None, Component(TEMPLATE, "Pending", TEMPLATE_NOT_FOUND, message))
    overrides = as_mapping(v1alpha1_spec(service).get("overrides"))
    matching = [c for c in allowed if _matches_overrides(c, overrides)] if overrides else allowed
    have = {normalize_gpu_model(m) for m in gpu_models} - {""}
    fitting = [c for c in matching if not c.gpu or normalize_gpu_model(c.gpu) in have]
    if not fitting:
        return AutoSelection(None, no_match)
    scoped = [c for c in fitting if c.namespaced] or fitting
    best = min(scoped, key=Candidate.rank)  # the first of the most preferred, as upstream scans them
    tied = sum(1 for c in scoped if c.rank() == best.rank())
    if tied > 1:
        message = f"Multiple templates ({tied}) satisfy model {quoted}"
        return AutoSelection(None, Component(TEMPLATE, "Pending", TEMPLATE_SELECTION_AMBIGUOUS, message))
    return AutoSelection(best, None)


def _allow_unoptimized(service: Mapping[str, Any]) -> bool:
    return as_mapping(v1alpha1_spec(service).get("template")).get("allowUnoptimized") is True


def _matches_overrides(candidate: Candidate, overrides: Mapping[str, Any]) -> bool:
    for key, value in (("metric", candidate.metric), ("precision", candidate.precision)):
        wanted = overrides.get(key)
        if isinstance(wanted, str) and wanted.lower() != value.lower():
            return False
    gpu = as_mapping(as_mapping(overrides.get("hardware")).get("gpu"))
    model = _text(gpu.get("model"))
    if model and candidate.gpu and normalize_gpu_model(model) != normalize_gpu_model(candidate.gpu):
        return False
    requests = gpu.get("requests")
    return not (_positive(requests) and candidate.gpu_count > 0 and candidate.gpu_count != requests)


def _score(value: str, order: Sequence[str]) -> int:
    upper = [o.upper() for o in order]
    return upper.index(value.upper()) if value.upper() in upper else len(order) + 1000


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _positive(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0
