"""An AIMService's template, selected by name: the first slice of upstream's template path for a service written in
v1alpha1 (docs/aim-versions.md, "What a v1alpha1 service gets reconciled"), as upstream's aimservice controller
selects it.

- **Which** (`select_template`): `spec.template.name` of v1alpha1 (`versions.service.template_name`, read from the
  annotation `aim.eai.amd.com/v1alpha1-fields`). The AIMServiceTemplate of that name in the service's namespace,
  else the AIMClusterServiceTemplate of that name. The template recorded in `status.resolvedTemplate` is used again
  while it still exists and is Ready (so a cluster template in use stays in use when a namespaced one of the same
  name appears, as upstream keeps its resolved reference); otherwise the lookup runs again. A service that names no
  template selects its model's default instead: the `spec.defaultServiceTemplate` a model written in v1alpha1
  carries (`service_models.ModelResolution.default_template`), looked up, kept and reported exactly as a named one.
  A service that names no template and whose model names none selects automatically among the templates of its
  resolved model, as upstream does (`template_selection`: readiness, `spec.template.allowUnoptimized`,
  `spec.overrides`, the Nodes' GPUs, namespaced first, upstream's preferences; the Ready one recorded in
  `status.resolvedTemplate` kept, whatever its name); no template for the model at all is no selection (`None`).
  A selection that finds no template only waits (no configuration error).
- **Its derived template** (`spec.overrides` giving a GPU model or count, a precision or a metric;
  `legacy.derived_templates`), as upstream's service derives one: the template selected (by name, as its model's
  default, or automatically) is the base when it is a namespaced AIMServiceTemplate that is not derived itself (a
  cluster template is used as it is, as upstream uses it). While the base is Ready, the selection carries the derived
  template to apply (`derive`: `<base>-ovr-<parts>-<hash>`, the base's spec with the overrides), and the controller
  selects what it applied (`derived`); while it is not Ready, or missing, the derived template of that name is
  selected when it exists (upstream looks a named template up under its derived name first), else the base as
  above. A derived template of that name another service made is selected as it is, never applied. The service
  thus waits for, reports and serves the derived template; `status.resolvedTemplate` names it.
- **Its component** `Template` (condition `TemplateReady`), upstream's reasons and messages:
  - missing: Failed / `TemplateNotFound` `template "<name>" not found`, and a configuration error (`ConfigValid` and
    `Ready` False / `ReferenceNotFound`): the service is `Failed` and nothing is applied until the template appears;
  - Ready: Ready / `Resolved` `<Kind> <name> is ready`;
  - NotAvailable: NotAvailable / `TemplateNotReady` `<Kind> <name> is not available (no matching GPUs)`;
  - Failed or Degraded: Failed / `TemplateNotReady` `<Kind> <name> is in failed state`;
  - Pending, Progressing, none or another: Pending / `TemplateNotReady` (`<Kind> <name> is not ready yet`, or
    `<Kind> <name> status: <status>`): upstream's service is `Pending` while an upstream dependency is not ready.
- **`status.resolvedTemplate`** (`resolved_ref`): `{kind, name, namespace (a namespaced template's), scope
  (Namespace or Cluster), uid}` while the selected template is Ready; absent otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from omectl.core.aim.legacy.derived_templates import (
    derived_template_name,
    is_derived,
    made_by_another,
    render_derived_template,
    service_overrides,
)
from omectl.core.aim.legacy.kinds import (
    CLUSTER_SERVICE_TEMPLATE,
    SCOPE_CLUSTER,
    SCOPE_NAMESPACE,
    SERVICE_TEMPLATE,
    resolved_reference,
)
from omectl.core.aim.meta import name_of, namespace_of
from omectl.core.aim.resolution import REFERENCE_NOT_FOUND
from omectl.core.aim.status import Component, ComponentState, ConfigError
from omectl.core.aim.template_selection import (
    TEMPLATE,
    TEMPLATE_NOT_FOUND,
    TEMPLATE_NOT_READY,
    TemplatesForModel,
    auto_select,
    candidates,
)
from omectl.core.aim.versions.engine import written_in_v1alpha1
from omectl.core.aim.versions.service import template_name
from omectl.core.jsonish import as_mapping

__all__ = ["TEMPLATE", "TEMPLATE_NOT_FOUND", "TEMPLATE_NOT_READY"]
TEMPLATE_READY: Final = "TemplateReady"
RESOLVED: Final = "Resolved"

TemplateLookup = Callable[[str, str, str], Mapping[str, Any] | None]
"""`(kind, namespace, name)` → the live template (namespace `""` for an AIMClusterServiceTemplate), or None."""


@dataclass(frozen=True)
class TemplateSelection:
    """The template a service names and how it stands."""

    name: str
    """The name the service asks for."""
    kind: str | None
    """AIMServiceTemplate or AIMClusterServiceTemplate; None when neither exists."""
    template: Mapping[str, Any] | None
    component: Component
    named: bool = True
    """Asked for by name (the service's or its model's default); False for upstream's automatic selection."""
    derive: dict[str, Any] | None = None
    """The derived template to apply for the service's overrides (module docstring), its base being this Ready
    template; None when there is none to apply."""

    @property
    def ready(self) -> bool:
        return self.component.state == "Ready"

    @property
    def config_error(self) -> ConfigError | None:
        """A missing template named by the service is a missing reference: the service fails until it appears (an
        automatic selection that finds none only waits)."""
        if self.template is not None or not self.named:
            return None
        return ConfigError(REFERENCE_NOT_FOUND, self.component.message)

    def derived(self, template: Mapping[str, Any]) -> TemplateSelection:
        """The selection of the derived template as the cluster holds it once `derive` is applied."""
        component = template_component(SERVICE_TEMPLATE, template)
        return TemplateSelection(name_of(template), SERVICE_TEMPLATE, template, component, named=self.named)

    def resolved_ref(self) -> dict[str, str] | None:
        """`status.resolvedTemplate` while the template is Ready, else None."""
        if self.template is None or self.kind is None or not self.ready:
            return None
        return resolved_reference(self.kind, self.template, namespaced=self.kind == SERVICE_TEMPLATE)


def select_template(
    service: Mapping[str, Any],
    lookup: TemplateLookup,
    default: str | None = None,
    *,
    model_name: str | None = None,
    templates: TemplatesForModel | None = None,
    gpu_models: Callable[[], Collection[str]] = frozenset,
) -> TemplateSelection | None:
    """The template `service` names, else `default` (its model's `defaultServiceTemplate`), looked up as the module
    docstring says, else upstream's automatic choice among the templates of `model_name` (the resolved model;
    `template_selection`, `gpu_models` the normalised GPU models the Nodes have); None when there is none of these."""
    name = template_name(service) or default
    if name is None:
        if model_name is None or templates is None:
            return None
        selected = _auto_selected(service, model_name, lookup, templates, gpu_models)
        return None if selected is None else _with_overrides(service, selected, lookup, model_name)
    return _with_overrides(service, _named(service, name, lookup), lookup, model_name)


def _named(service: Mapping[str, Any], name: str, lookup: TemplateLookup) -> TemplateSelection:
    namespace = namespace_of(service)
    found = _kept(service, name, lookup)
    if found is None:
        for kind, where in ((SERVICE_TEMPLATE, namespace), (CLUSTER_SERVICE_TEMPLATE, "")):
            template = lookup(kind, where, name)
            if template is not None:
                found = (kind, template)
                break
    if found is None:
        missing = Component(TEMPLATE, "Failed", TEMPLATE_NOT_FOUND, f'template "{name}" not found')
        return TemplateSelection(name, None, None, missing)
    kind, template = found
    return TemplateSelection(name, kind, template, template_component(kind, template))


def template_component(kind: str, template: Mapping[str, Any]) -> Component:
    """The `Template` component of a template that exists, from its `status.status`."""
    label = f"{kind} {name_of(template)}"
    status = as_mapping(template.get("status")).get("status")
    state: ComponentState
    if status == "Ready":
        return Component(TEMPLATE, "Ready", RESOLVED, f"{label} is ready")
    if status == "NotAvailable":
        state, message = "NotAvailable", f"{label} is not available (no matching GPUs)"
    elif status in ("Failed", "Degraded"):
        state, message = "Failed", f"{label} is in failed state"
    elif status in ("Pending", "Progressing"):
        state, message = "Pending", f"{label} is not ready yet"
    else:
        state, message = "Pending", f"{label} status: {status if isinstance(status, str) else ''}"
    return Component(TEMPLATE, state, TEMPLATE_NOT_READY, message)


def _with_overrides(
    service: Mapping[str, Any], selection: TemplateSelection, lookup: TemplateLookup, model_name: str | None
) -> TemplateSelection:
    """`selection` as the service's overrides make it (module docstring, "Its derived template")."""
    base = selection.template
    if base is not None and (selection.kind != SERVICE_TEMPLATE or is_derived(base)):
        return selection
    base_name = name_of(base) if base is not None else selection.name
    derived_name = derived_template_name(base_name, service_overrides(service)) if base_name else None
    if derived_name is None:
        return selection
    derived = lookup(SERVICE_TEMPLATE, namespace_of(service), derived_name)
    if base is not None and selection.ready and (derived is None or not made_by_another(derived, service)):
        return replace(selection, derive=render_derived_template(service, base, derived_name, model_name))
    if derived is None:
        return selection
    component = template_component(SERVICE_TEMPLATE, derived)
    return TemplateSelection(derived_name, SERVICE_TEMPLATE, derived, component, named=selection.named)


def _auto_selected(
    service: Mapping[str, Any],
    model_name: str,
    lookup: TemplateLookup,
    templates: TemplatesForModel,
    gpu_models: Callable[[], Collection[str]],
) -> TemplateSelection | None:
    kept = _kept(service, None, lookup)
    if kept is not None:
        kind, template = kept
        return TemplateSelection(name_of(template), kind, template, template_component(kind, template), named=False)
    found = candidates(service, model_name, templates)
    if not found:
        if not written_in_v1alpha1(service):
            return None  # a v1alpha2 service is served from its model alone
        # upstream's v1alpha1 service waits for a template of its model (its frozen template-not-found scenario)
        missing = Component(TEMPLATE, "Pending", TEMPLATE_NOT_FOUND, f'No templates found for model "{model_name}"')
        return TemplateSelection("", None, None, missing, named=False)
    selection = auto_select(service, model_name, found, gpu_models())
    if selection.chosen is None:
        assert selection.component is not None
        return TemplateSelection("", None, None, selection.component, named=False)
    kind, template = selection.chosen.kind, selection.chosen.template
    return TemplateSelection(name_of(template), kind, template, template_component(kind, template), named=False)


def _kept(service: Mapping[str, Any], name: str | None, lookup: TemplateLookup) -> tuple[str, Mapping[str, Any]] | None:
    """The template `status.resolvedTemplate` records, when it still exists and is Ready (and is the one named, for
    a service or model that names one; upstream keeps whichever it resolved)."""
    ref = as_mapping(as_mapping(service.get("status")).get("resolvedTemplate"))
    name = name if name is not None else ref.get("name") if isinstance(ref.get("name"), str) else None
    if name is None or ref.get("name") != name:
        return None
    scope = ref.get("scope")
    if scope == SCOPE_NAMESPACE:
        kind, where = SERVICE_TEMPLATE, namespace_of(service)
    elif scope == SCOPE_CLUSTER:
        kind, where = CLUSTER_SERVICE_TEMPLATE, ""
    else:
        return None
    template = lookup(kind, where, name)
    if template is None or as_mapping(template.get("status")).get("status") != "Ready":
        return None
    return kind, template
