"""Kubernetes RBAC evaluation, pure: does a (Cluster)Role allow a request?

The rules follow the API server's authorizer (k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go): a rule
allows a resource request when its `verbs`, `apiGroups` and `resources` each match (`*` matches anything; a
resource is `<plural>` or `<plural>/<subresource>`, and `*/<subresource>` matches that subresource of every
resource) and, when the rule lists `resourceNames`, the request names one of them. A request without a name (a
`list`, a `watch` of a collection, a `create` by POST) never matches a rule with `resourceNames`. Non-resource
requests (`/healthz`, `/apis`) match `nonResourceURLs` exactly or by a prefix ending in `*`.

The verb of a request comes from its method and path as the API server derives it (`request_verb`): GET is `get`
for a named object, `list` for a collection and `watch` with `watch=1|true`; POST `create`; PUT `update`; PATCH
`patch`; DELETE `delete` for a named object and `deletecollection` for a collection. A PATCH or PUT that creates
the object (answered 201; server-side apply does this) is also authorized as `create` (`implied_requests`); this
module checks that `create` without a name, the stricter reading, so a rule limited by `resourceNames` never
grants it.

The test of the deployed RBAC (tests/rbac/test_least_privilege.py) maps every request the controller sent to an
embedded API server onto these attributes and asks `Role.allows`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "VERBS",
    "Grant",
    "PolicyRule",
    "Request",
    "Role",
    "denied",
    "implied_requests",
    "request_verb",
]

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


@dataclass(frozen=True, slots=True)
class Request:
    """The attributes an authorizer sees: a resource request (`resource` set) or a non-resource one (`path`)."""

    verb: str
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""  # non-resource requests only

    @property
    def is_resource(self) -> bool:
        return bool(self.resource)

    @property
    def combined_resource(self) -> str:
        """`<plural>` or `<plural>/<subresource>`, the form rules list."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    def describe(self) -> str:
        if not self.is_resource:
            return f"{self.verb} {self.path}"
        group = f".{self.group}" if self.group else ""
        where = f" -n {self.namespace}" if self.namespace else ""
        name = f" {self.name}" if self.name else ""
        return f"{self.verb} {self.combined_resource}{group}{name}{where}"


@dataclass(frozen=True, slots=True)
class PolicyRule:
    """One entry of a Role's `rules`."""

    verbs: tuple[str, ...]
    api_groups: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    resource_names: tuple[str, ...] = ()
    non_resource_urls: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, rule: Mapping[str, Any]) -> PolicyRule:
        def strings(key: str) -> tuple[str, ...]:
            return tuple(str(v) for v in rule.get(key) or ())

        return cls(
            verbs=strings("verbs"),
            api_groups=strings("apiGroups"),
            resources=strings("resources"),
            resource_names=strings("resourceNames"),
            non_resource_urls=strings("nonResourceURLs"),
        )

    def verb_matches(self, verb: str) -> bool:
        return "*" in self.verbs or verb in self.verbs

    def group_matches(self, group: str) -> bool:
        return "*" in self.api_groups or group in self.api_groups

    def resource_matches(self, combined: str, subresource: str) -> bool:
        for resource in self.resources:
            if resource in ("*", combined):
                return True
            if subresource and resource == f"*/{subresource}":
                return True
        return False

    def name_matches(self, name: str) -> bool:
        return not self.resource_names or name in self.resource_names

    def url_matches(self, path: str) -> bool:
        for url in self.non_resource_urls:
            if url in ("*", path):
                return True
            if url.endswith("*") and path.startswith(url[:-1]):
                return True
        return False

    def allows(self, request: Request) -> bool:
        if not self.verb_matches(request.verb):
            return False
        if not request.is_resource:
            return self.url_matches(request.path)
        return (
            self.group_matches(request.group)
            and self.resource_matches(request.combined_resource, request.subresource)
            and self.name_matches(request.name)
        )


@dataclass(frozen=True, slots=True)
class Grant:
    """One (group, resource, verb) a rule grants, possibly limited to names: the unit of a coverage check."""

    rule: int  # index in the role's rules
    group: str
    resource: str  # as the rule writes it, `<plural>[/<subresource>]`
    verb: str
    resource_names: tuple[str, ...] = ()

    def describe(self) -> str:
        group = f".{self.group}" if self.group else ""
        names = f" [{','.join(self.resource_names)}]" if self.resource_names else ""
        return f"{self.verb} {self.resource}{group}{names}"


@dataclass(frozen=True)
class Role:
    """A ClusterRole (bound cluster-wide by a ClusterRoleBinding) or a Role (only its own namespace)."""

    name: str
    rules: tuple[PolicyRule, ...]
    namespace: str | None = None  # a Role's namespace; None for a ClusterRole

    @classmethod
    def from_manifest(cls, doc: Mapping[str, Any]) -> Role:
        kind = doc.get("kind")
        if kind not in ("ClusterRole", "Role"):
            raise ValueError(f"not a Role or ClusterRole: {kind}")
        meta = doc.get("metadata") or {}
        namespace = (meta.get("namespace") or "") if kind == "Role" else None
        rules = tuple(PolicyRule.from_dict(r) for r in doc.get("rules") or ())
        return cls(str(meta.get("name", "")), rules, namespace)

    def in_scope(self, request: Request) -> bool:
        """A Role grants nothing outside its namespace (and nothing cluster-scoped)."""
        return self.namespace is None or (request.is_resource and request.namespace == self.namespace)

    def matching_rules(self, request: Request) -> list[int]:
        """Indices of the rules that allow `request` (empty: denied)."""
        if not self.in_scope(request):
            return []
        return [i for i, rule in enumerate(self.rules) if rule.allows(request)]

    def allows(self, request: Request) -> bool:
        return bool(self.matching_rules(request))

    def grants(self) -> Iterator[Grant]:
        """Every (group, resource, verb) of every resource rule, with the names it is limited to."""
        for i, rule in enumerate(self.rules):
            for group in rule.api_groups:
                for resource in rule.resources:
                    for verb in rule.verbs:
                        yield Grant(i, group, resource, verb, rule.resource_names)

    def grant_allows(self, grant: Grant, request: Request) -> bool:
        """Whether `request` is one `grant` allows (what a coverage check counts as using it)."""
        single = PolicyRule((grant.verb,), (grant.group,), (grant.resource,), grant.resource_names)
        return self.in_scope(request) and single.allows(request)


def request_verb(method: str, named: bool, watch: bool) -> str:
    """The authorizer's verb of a resource request: `named` when the path names an object, `watch` for
    `watch=1|true` on a GET."""
    method = method.upper()
    if method in ("GET", "HEAD"):
        return "watch" if watch else ("get" if named else "list")
    if method == "POST":
        return "create"
    if method == "PUT":
        return "update"
    if method == "PATCH":
        return "patch"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return method.lower()


def implied_requests(request: Request, code: int) -> list[Request]:
    """`request` and the further checks the API server makes: a PATCH or PUT answered 201 created the object,
    which is also authorized as `create` (without a name: the stricter reading)."""
    out = [request]
    if request.is_resource and request.verb in ("patch", "update") and code == 201:
        out.append(
            Request(
                "create",
                request.group,
                request.resource,
                request.subresource,
                request.namespace,
                "",
            )
        )
    return out


def denied(role: Role, requests: Iterable[Request]) -> list[Request]:
    """The requests `role` does not allow, in order."""
    return [r for r in requests if not role.allows(r)]
