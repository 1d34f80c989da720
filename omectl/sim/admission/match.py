"""Which ValidatingWebhookConfiguration webhooks a write selects, as kube-apiserver 1.32's generic webhook
matcher decides: rules (operations, groups, versions, resources, scope, matchPolicy Equivalent), then the
namespace and object selectors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from omectl.sim.apiserver.errors import APIError, internal_error, not_found
from omectl.sim.apiserver.registry import ResourceType
from omectl.sim.apiserver.selectors import label_selector_from_object


def _default_user() -> dict[str, Any]:
    return {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}


@dataclass
class AdmissionAttributes:
    """One write as admission sees it (`admission.Attributes`)."""

    operation: str  # CREATE | UPDATE | DELETE | CONNECT
    resource_type: ResourceType
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    obj: dict[str, Any] | None = None
    old_obj: dict[str, Any] | None = None
    dry_run: bool = False
    # CreateOptions/UpdateOptions/DeleteOptions (kind + apiVersion meta.k8s.io/v1); empty: the bare kind.
    options: dict[str, Any] = field(default_factory=dict)
    user: dict[str, Any] = field(default_factory=_default_user)
    # Other served versions of the same storage, for `matchPolicy: Equivalent` (e.g. every version of a CRD).
    equivalent_types: Sequence[ResourceType] = ()
    # How an object is converted to an equivalent version (a CRD's conversion webhook); None: relabelled.
    convert: Callable[[dict[str, Any], ResourceType], Awaitable[dict[str, Any]]] | None = None


def _is_namespaces(rt: ResourceType) -> bool:
    return rt.group == "" and rt.version == "v1" and rt.plural == "namespaces"


def request_namespace(attrs: AdmissionAttributes) -> str:
    """The namespace the webhooks see: a Namespace's own name for a write to a Namespace (the real server sets
    it so even on create), else the write's namespace."""
    if not attrs.namespace and attrs.resource_type.plural == "namespaces" and attrs.resource_type.group == "":
        return attrs.name
    return attrs.namespace


def _in_or_star(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


def _rule_matches(rule: dict[str, Any], attrs: AdmissionAttributes, rt: ResourceType, namespace: str) -> bool:
    scope = rule.get("scope") or "*"
    if scope == "Namespaced":
        if _is_namespaces(rt) or not namespace:
            return False
    elif scope == "Cluster":
        if not (_is_namespaces(rt) or not namespace):
            return False
    elif scope != "*":
        return False
    if not (
        _in_or_star(rule.get("operations"), attrs.operation)
        and _in_or_star(rule.get("apiGroups"), rt.group)
        and _in_or_star(rule.get("apiVersions"), rt.version)
    ):
        return False
    for entry in rule.get("resources") or ():
        resource, _, sub = entry.partition("/")
        if resource in ("*", rt.plural) and sub in ("*", attrs.subresource):
            return True
    return False


def _select_version(webhook: dict[str, Any], attrs: AdmissionAttributes, namespace: str) -> ResourceType | None:
    """The version the webhook is called with: the request's own, or (matchPolicy Equivalent, the default) the
    first equivalent version an earlier rule names. None: the webhook's rules do not select the request."""
    rules = [r for r in webhook.get("rules") or () if isinstance(r, dict)]
    request_type = attrs.resource_type
    for rule in rules:
        if _rule_matches(rule, attrs, request_type, namespace):
            return request_type
    if (webhook.get("matchPolicy") or "Equivalent") != "Equivalent":
        return None
    for rule in rules:
        for other in attrs.equivalent_types:
            if (other.group, other.version, other.plural) == (
                request_type.group,
                request_type.version,
                request_type.plural,
            ):
                continue
            if _rule_matches(rule, attrs, other, namespace):
                return other
    return None


def _is_everything(selector: Any) -> bool:
    # An unset selector is defaulted to {} by the v1 API, and {} selects everything.
    return not selector or not (selector.get("matchLabels") or selector.get("matchExpressions"))


def _labels_of(obj: dict[str, Any] | None) -> dict[str, str] | None:
    if not isinstance(obj, dict):
        return None
    return (obj.get("metadata") or {}).get("labels")


def _namespace_selector_matches(
    selector: dict[str, Any],
    attrs: AdmissionAttributes,
    namespace: str,
    namespace_labels: Callable[[str], dict[str, str] | None],
) -> bool:
    """Raises APIError (404 for a missing namespace, 500 for a bad selector) as the real matcher does."""
    try:
        matcher = label_selector_from_object(selector)
    except ValueError as exc:  # SelectorError
        raise internal_error(str(exc)) from exc
    if _is_namespaces(attrs.resource_type) and not attrs.subresource and attrs.operation in ("CREATE", "UPDATE"):
        # The namespace being written is not stored yet: its own labels decide.
        return matcher.matches(_labels_of(attrs.obj))
    labels = namespace_labels(namespace)
    if labels is None:
        raise not_found("namespaces", "", namespace)
    return matcher.matches(labels)


def _object_selector_matches(selector: dict[str, Any], attrs: AdmissionAttributes) -> bool:
    try:
        matcher = label_selector_from_object(selector)
    except ValueError as exc:  # SelectorError
        raise internal_error(str(exc)) from exc
    candidates = [o for o in (None if attrs.operation == "DELETE" else attrs.obj, attrs.old_obj) if o is not None]
    return any(matcher.matches(_labels_of(o)) for o in candidates)


@dataclass
class MatchedWebhook:
    """A webhook that selects the write, and the version of the resource it is to be sent."""

    webhook: dict[str, Any]
    version: ResourceType


def matching_webhooks(
    attrs: AdmissionAttributes,
    configurations: list[dict[str, Any]],
    namespace_labels: Callable[[str], dict[str, str] | None],
) -> list[MatchedWebhook]:
    """The webhooks of `configurations` that select the write, in the order the real server calls them.
    Raises APIError when a selector a webhook needs cannot be evaluated (see `_namespace_selector_matches`)."""
    namespace = request_namespace(attrs)
    out: list[MatchedWebhook] = []
    # The real server orders configurations by name, then webhooks as listed.
    for config in sorted(configurations, key=lambda c: (c.get("metadata") or {}).get("name", "")):
        for webhook in config.get("webhooks") or ():
            if not isinstance(webhook, dict):
                continue
            version = _select_version(webhook, attrs, namespace)
            if version is None:
                continue
            # As upstream: a selector that cannot be evaluated fails the request only when nothing else
            # already excludes the webhook.
            ns_selector: dict[str, Any] = webhook.get("namespaceSelector") or {}
            ns_error: APIError | None = None
            ns_match = True
            cluster_scoped = not namespace and not _is_namespaces(attrs.resource_type)
            if not (cluster_scoped or _is_everything(ns_selector)):
                try:
                    ns_match = _namespace_selector_matches(ns_selector, attrs, namespace, namespace_labels)
                except APIError as exc:
                    ns_error, ns_match = exc, False
            if not ns_match and ns_error is None:
                continue
            obj_selector: dict[str, Any] = webhook.get("objectSelector") or {}
            obj_error: APIError | None = None
            obj_match = True
            if not _is_everything(obj_selector):
                try:
                    obj_match = _object_selector_matches(obj_selector, attrs)
                except APIError as exc:
                    obj_error, obj_match = exc, False
            if not obj_match and obj_error is None:
                continue
            if ns_error is not None:
                raise ns_error
            if obj_error is not None:
                raise obj_error
            out.append(MatchedWebhook(webhook, version))
    return out
