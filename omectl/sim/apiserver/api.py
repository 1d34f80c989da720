"""The API operations of one cluster: get, list, create, update, patch, apply and delete with the real rules.

Write path: decode -> field check -> prune/default -> object rules -> schema validation -> admission
webhooks -> system metadata -> commit (one resourceVersion, one event). The rules run in the version of the
request: a custom resource whose CRD converts through a webhook (`conversion.py`) is read into that version
and written back in the storage version (after admission on a create, before it on an update, where
kube-apiserver compares the encoded objects). After an await (a webhook of either kind) the live object is
read again and the write is retried (or answered with a conflict) if it moved.
"""

from __future__ import annotations

import os
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from omectl.sim.admission.config import validate_webhook_configuration
from omectl.sim.admission.dispatch import WebhookDispatcher
from omectl.sim.admission.match import AdmissionAttributes
from omectl.sim.apiserver import errors, service_allocation
from omectl.sim.apiserver.builtin_defaults import apply_builtin_defaults
from omectl.sim.apiserver.builtin_schemas import builtin_schema
from omectl.sim.apiserver.cel import BLOCKING_KINDS, blocked_error
from omectl.sim.apiserver.cel_check import rule_compile_errors
from omectl.sim.apiserver.clock import now_rfc3339
from omectl.sim.apiserver.conversion import DEFAULT_TIMEOUT_SECONDS, ConversionConfig, ConversionError, WebhookConverter
from omectl.sim.apiserver.conversion_rules import conversion_errors
from omectl.sim.apiserver.core_rules import (
    api_approval_errors,
    core_event_errors,
    fold_string_data,
    immutable_data_errors,
)
from omectl.sim.apiserver.create_rules import prepare_builtin_create
from omectl.sim.apiserver.errors import APIError, FieldError
from omectl.sim.apiserver.events import core_to_events_v1, events_v1_to_core
from omectl.sim.apiserver.metadata import meta_errors, name_errors
from omectl.sim.apiserver.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from omectl.sim.apiserver.registry import ResourceType, TypeRegistry, types_from_crd
from omectl.sim.apiserver.schema import StructuralSchema, default_crd, validate_crd
from omectl.sim.apiserver.selectors import parse_field_selector, parse_label_selector
from omectl.sim.apiserver.ssa import (
    builtin_list_types,
    default_manager,
    missing_field_manager_error,
    record_update,
    server_side_apply,
)
from omectl.sim.apiserver.store import ADDED, DELETED, MODIFIED, StorageKey, Store
from omectl.sim.apiserver.webhook_client import WebhookClient
from omectl.sim.apiserver.workload_rules import quantity_error, serves_pod_template, service_errors, workload_errors

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

PROTECTED_NAMESPACES = ("default", "kube-system", "kube-public")
DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CRD_KEY: StorageKey = ("apiextensions.k8s.io", "customresourcedefinitions")
NS_KEY: StorageKey = ("", "namespaces")
SERVICE_KEY: StorageKey = ("", "services")
WEBHOOK_KEY: StorageKey = ("admissionregistration.k8s.io", "validatingwebhookconfigurations")
CRD_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_FALSE = {"0", "f", "F", "FALSE", "false", "False"}


def parse_bool(value: str | None, name: str) -> bool:
    if value is None or value == "":
        return False
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise errors.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax for {name}')


@dataclass
class WriteOptions:
    """Query parameters shared by writes."""

    dry_run: bool = False
    field_manager: str = ""
    field_validation: str = "Warn"
    force: bool | None = None

    @classmethod
    def from_query(cls, query: Mapping[str, str], user_agent: str | None) -> WriteOptions:
        dry = query.getall("dryRun", []) if hasattr(query, "getall") else [query.get("dryRun", "")]
        dry = [d for d in dry if d]
        for d in dry:
            if d != "All":
                raise errors.invalid("", "", "", [FieldError("NotSupported", "dryRun", value=d, supported=("All",))])
        validation = query.get("fieldValidation", "") or "Warn"
        if validation not in ("Ignore", "Warn", "Strict"):
            raise errors.bad_request(
                f"fieldValidation parameter unsupported: {validation}, must be one of Ignore, Warn, Strict"
            )
        force_raw = query.get("force")
        return cls(
            dry_run=bool(dry),
            field_manager=query.get("fieldManager", "") or default_manager(user_agent),
            field_validation=validation,
            force=parse_bool(force_raw, "force") if force_raw is not None else None,
        )


@dataclass
class WriteResult:
    obj: dict[str, Any]
    code: int = 200
    warnings: list[str] = field(default_factory=list)


class ClusterAPI:
    """All objects and rules of one simulated cluster."""

    def __init__(
        self,
        name: str,
        store: Store | None = None,
        allow_http_webhooks: bool = False,
        conversion_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.name = name
        self.store = store or Store()
        self.types = TypeRegistry()
        self.webhook_client = WebhookClient(allow_http=allow_http_webhooks)
        self.webhooks = WebhookDispatcher(client=self.webhook_client)
        self.conversion_timeout = conversion_timeout
        self._converters: dict[StorageKey, WebhookConverter] = {}  # the CRDs that convert through a webhook
        self._schemas: dict[int, StructuralSchema] = {}
        self._unserved_schemas: dict[tuple[StorageKey, str], StructuralSchema] = {}  # versions of CRDs not served
        self.on_crd_change: list[Callable[[], None]] = []
        if not self.store.buckets:
            self._create_default_namespaces()
        else:
            for crd in list(self.store.items(CRD_KEY)):
                self._sync_crd_types(crd)

    # --- helpers ---------------------------------------------------------------------------------------

    def schema_for(self, rt: ResourceType) -> StructuralSchema | None:
        if rt.schema is None:
            return None
        compiled = self._schemas.get(id(rt))
        if compiled is None:
            compiled = StructuralSchema(rt.schema)
            self._schemas[id(rt)] = compiled
        return compiled

    @staticmethod
    def _reset_fields(rt: ResourceType, subresource: str | None) -> list[tuple[str, ...]]:
        """Fields a write through this endpoint cannot own (the other half of a status subresource split)."""
        if not rt.has_status:
            return []
        return [("spec",)] if subresource == "status" else [("status",)]

    def list_types_for(self, rt: ResourceType) -> Callable[[tuple[str, ...]], tuple[str, tuple[str, ...]]]:
        schema = self.schema_for(rt)
        return schema.list_type if schema is not None else builtin_list_types

    def _create_default_namespaces(self) -> None:
        rt = self.types.lookup("", "v1", "namespaces")
        assert rt is not None
        for ns in DEFAULT_NAMESPACES:
            obj: dict[str, Any] = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
            self._prepare_new(rt, obj, "kube-apiserver", now_rfc3339())
            obj["metadata"]["resourceVersion"] = str(self.store.next_rv())
            self.store.commit(ADDED, rt.storage_key, obj, None)

    def namespace_labels(self, name: str) -> dict[str, str] | None:
        ns = self.store.get(NS_KEY, "", name)
        return None if ns is None else (ns["metadata"].get("labels") or {})

    def _check_namespace(self, rt: ResourceType, namespace: str, creating: bool) -> None:
        if not rt.namespaced:
            return
        ns = self.store.get(NS_KEY, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if creating and ns["metadata"].get("deletionTimestamp"):
            raise errors.forbidden(
                rt.plural,
                rt.group,
                "",
                f"unable to create new content in namespace {namespace} because it is being terminated",
                [
                    {
                        "reason": "NamespaceTerminating",
                        "message": f"namespace {namespace} is being terminated",
                        "field": "metadata.namespace",
                    }
                ],
            )

    @staticmethod
    def _not_found(rt: ResourceType, name: str) -> APIError:
        return errors.not_found(rt.plural, rt.group, name)

    # --- reads -----------------------------------------------------------------------------------------

    async def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.storage_key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise self._not_found(rt, name)
        converter = self.converter(rt)
        if converter is None:
            return self._view(rt, obj)
        return await _converted(converter.convert(obj, rt.version))

    # --- conversion ------------------------------------------------------------------------------------

    def converter(self, rt: ResourceType) -> WebhookConverter | None:
        """The webhook converter of a custom resource whose CRD converts through one (None: relabelled views)."""
        return None if rt.builtin else self._converters.get(rt.storage_key)

    def _service(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.store.get(SERVICE_KEY, namespace, name)

    async def served(self, rt: ResourceType, stored: dict[str, Any]) -> dict[str, Any]:
        """A stored object as `rt` serves it in a list or a watch (conversions remembered per resourceVersion)."""
        converter = self.converter(rt)
        if converter is None:
            return self._view(rt, stored)
        return await _converted(converter.cached_view(stored, rt.version))

    async def _answer(self, rt: ResourceType, stored: dict[str, Any], *, dry_run: bool = False) -> dict[str, Any]:
        """The object a write answers with: what it stored (or would have), read back in the request's version;
        a conversion of what was stored is kept for lists and watches."""
        converter = self.converter(rt)
        if converter is None:
            return self._view(rt, stored)
        view = await _converted(converter.convert(stored, rt.version))
        if not dry_run:
            converter.remember(stored, rt.version, view)
        return view

    async def _in_request_version(self, rt: ResourceType, live: dict[str, Any]) -> dict[str, Any]:
        """The live object in the form a write's rules see it: the stored form, except for a custom resource
        converted through a webhook, which is read in the request's version (the rules are that version's)."""
        converter = self.converter(rt)
        return live if converter is None else await _converted(converter.convert(live, rt.version))

    async def _for_storage(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """A written object as it is stored: in the storage version, when a webhook converts the kind."""
        converter = self.converter(rt)
        if converter is None:
            return obj
        return await _converted(converter.convert(obj, converter.config.storage_version))

    def _sync_converter(self, crd: dict[str, Any]) -> None:
        spec = crd.get("spec") or {}
        key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        config = ConversionConfig.of(crd)
        if config is None:
            self._converters.pop(key, None)
        elif (current := self._converters.get(key)) is None or current.config != config:
            self._converters[key] = WebhookConverter(
                config, self.webhook_client, self._service, self._pruner(key), self.conversion_timeout
            )

    def _pruner(self, key: StorageKey) -> Callable[[dict[str, Any], str], None]:
        """Prunes an object of the kind to the schema of a version of its CRD, served or not (the CRD is read
        when the pruner runs, so it follows schema changes)."""

        def prune(obj: dict[str, Any], version: str) -> None:
            schema = self._version_schema(key, version)
            if schema is not None:
                schema.prune(obj)
                schema.drop_nulls(obj)

        return prune

    def _version_schema(self, key: StorageKey, version: str) -> StructuralSchema | None:
        served = self.types.lookup(key[0], version, key[1])
        if served is not None:
            return self.schema_for(served)
        crd = self.store.get(CRD_KEY, "", f"{key[1]}.{key[0]}") or {}
        for entry in (crd.get("spec") or {}).get("versions") or ():
            raw = (entry.get("schema") or {}).get("openAPIV3Schema")
            if entry.get("name") == version and isinstance(raw, dict):
                compiled = self._unserved_schemas.get((key, version))
                if compiled is None:
                    compiled = self._unserved_schemas[(key, version)] = StructuralSchema(raw)
                return compiled
        return None

    @staticmethod
    def _view(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The object as served by `rt` (other served versions of a CRD differ only in apiVersion)."""
        if obj.get("apiVersion") == rt.group_version:
            return obj
        if rt.group == "events.k8s.io":
            return core_to_events_v1(obj)
        view = dict(obj)
        view["apiVersion"] = rt.group_version
        return view

    async def list_objects(
        self, rt: ResourceType, namespace: str, query: Mapping[str, str]
    ) -> tuple[list[dict[str, Any]], str, str | None, int | None]:
        """Items, list resourceVersion, continue token and remaining count."""
        labels = parse_label_selector(query.get("labelSelector", "") or "")
        fields = parse_field_selector(
            query.get("fieldSelector", "") or "", ("metadata.name", "metadata.namespace", *rt.field_labels)
        )
        limit = int(query.get("limit", "0") or 0)
        token = query.get("continue", "") or ""
        if token and query.get("resourceVersion"):
            raise errors.bad_request("specifying resource version is not allowed when using continue")
        start_after: tuple[str, str] | None = None
        list_rv = self.store.rv
        if token:
            try:
                decoded = orjson.loads(_b64decode(token))
                start_after = (decoded["ns"], decoded["name"])
                list_rv = int(decoded["rv"])
            except Exception as exc:
                raise errors.bad_request(f"continue key is not valid: {exc}") from None
            if list_rv < self.store.history_floor(rt.storage_key):
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You can "
                    "start a new list without the continue parameter, or use the continue token in this "
                    "response to retrieve the remainder of the results. Continuing with the provided token "
                    "results in an inconsistent list - objects that were created, modified, or deleted between "
                    "the time the first chunk was returned and now may show up in the list."
                )
        name_eq = fields.requirement_for("metadata.name")
        bucket = self.store.buckets.get(rt.storage_key, {})
        if name_eq is not None and rt.namespaced and namespace:
            candidates = [o for o in [bucket.get((namespace, name_eq))] if o is not None]
        elif name_eq is not None and not rt.namespaced:
            candidates = [o for o in [bucket.get(("", name_eq))] if o is not None]
        else:
            candidates = list(self.store.items(rt.storage_key, namespace if rt.namespaced else None))
        out: list[dict[str, Any]] = []
        remaining: int | None = None
        next_token: str | None = None
        matching = (
            o
            for o in candidates
            if (labels.empty or labels.matches(o["metadata"].get("labels"))) and (fields.empty or fields.matches(o))
        )
        if start_after is not None:
            matching = (
                o for o in matching if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > start_after
            )
        for obj in matching:
            if limit and len(out) >= limit:
                rest = 1 + sum(1 for _ in matching)
                remaining = rest
                last = out[-1]["metadata"]
                next_token = _b64encode(
                    orjson.dumps({"rv": list_rv, "ns": last.get("namespace", ""), "name": last["name"]})
                )
                break
            out.append(obj)
        current_rv = str(self.store.rv)  # before a conversion may let the store move on
        converter = self.converter(rt)
        if converter is None:
            out = [self._view(rt, obj) for obj in out]
        else:
            out = [await _converted(converter.cached_view(obj, rt.version)) for obj in out]
        return out, current_rv, next_token, remaining

    # --- create ----------------------------------------------------------------------------------------

    def _decode_check(self, rt: ResourceType, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                f"json: cannot unmarshal {_go_json_type(body)} into Go value of type map[string]interface {{}}"
            )
        api_version = body.get("apiVersion")
        kind = body.get("kind")
        if api_version and api_version != rt.group_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rt.group_version})"
            )
        if kind and kind != rt.kind:
            raise errors.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        meta = body.get("metadata")
        if meta is None:
            body["metadata"] = {}
        elif not isinstance(meta, dict):
            raise errors.bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: metadata must be an object'
            )
        body["apiVersion"] = rt.group_version
        body["kind"] = rt.kind
        if rt.storage_key == ("", "secrets"):
            fold_string_data(body)
        if serves_pod_template(rt.group, rt.kind) and (message := quantity_error(rt.group, rt.kind, rt.version, body)):
            raise errors.bad_request(message)
        return body

    @staticmethod
    def _to_storage(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        """The stored shape of an object written through `rt`."""
        if rt.group == "events.k8s.io":
            return events_v1_to_core(obj)
        return obj

    def _field_checks(
        self, rt: ResourceType, obj: dict[str, Any], opts: WriteOptions, *, defaults: bool = True
    ) -> list[str]:
        """Unknown fields (Strict: 400, Warn: warnings), pruning, defaulting and dropping the nulls a custom
        resource's schema does not allow (kube's decoder: PruneNonNullableNullsWithoutDefaults); returns warnings.

        An applied configuration is not defaulted: its defaults are applied to the merged object instead, so
        the applier does not come to own fields it never set.
        """
        schema = self.schema_for(rt)
        custom = schema is not None
        if schema is None:
            # A built-in kind: its fields are checked against its schema, its defaults are the Go types' own
            if defaults:
                apply_builtin_defaults(rt.group, rt.kind, obj)
            schema = builtin_schema(rt.group, rt.version, rt.kind)
            if schema is None:
                return []
            defaults = False
        warnings: list[str] = []
        unknown: list[str] = []
        if opts.field_validation != "Ignore":
            unknown = schema.unknown_fields(obj)
            if custom:
                # kube's structural pruning reports a custom resource's paths sorted; the Go decoder of a
                # built-in kind reports them as it reads them, in the document's order
                unknown.sort()
            if unknown:
                if opts.field_validation == "Strict":
                    listed = ", ".join(f'unknown field "{u}"' for u in unknown)
                    raise errors.bad_request(
                        f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
                        f"strict decoding error: {listed}"
                    )
                warnings = [f'unknown field "{u}"' for u in unknown]
        if unknown or opts.field_validation == "Ignore":
            schema.prune(obj)  # prune removes exactly what unknown_fields reports: nothing to do without them
        if defaults:
            schema.apply_defaults(obj)
            schema.drop_nulls(obj)  # a null the schema does not allow and cannot default is dropped, not refused
        return warnings

    def _apply_defaults(self, rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        schema = self.schema_for(rt)
        if schema is not None:
            schema.apply_defaults(obj)
        else:
            apply_builtin_defaults(rt.group, rt.kind, obj)
        return obj

    def _validate(
        self, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None, subresource: str = ""
    ) -> list[str]:
        """422 Invalid with every field error; returns warnings (validation rules ratcheted on an update)."""
        meta = obj["metadata"]
        name = meta.get("name", "")
        errs: list[FieldError] = []
        if rt.plural == "namespaces" and name:
            errs += name_errors(name, dns_label=True)
        elif name and rt.plural != "events":
            errs += name_errors(name)
        errs += meta_errors(meta)
        schema = self.schema_for(rt)
        warnings: list[str] = []
        if schema is not None:
            errs += schema.validate_status(obj) if subresource == "status" else schema.validate(obj)
            rules = schema.rules
            if rules is not None:
                if any(e.kind in BLOCKING_KINDS for e in errs):
                    errs.append(blocked_error())
                else:
                    rule_errors, warnings = rules.validate(obj, old)
                    errs += rule_errors
        if rt.storage_key == CRD_KEY:
            errs += validate_crd(obj)
            errs += rule_compile_errors(obj, old)
            errs += conversion_errors(obj, old)
            errs += api_approval_errors(obj, old)
        elif rt.storage_key == WEBHOOK_KEY:
            errs += validate_webhook_configuration(obj)
        elif rt.group == "events.k8s.io" and old is None:
            errs += _events_v1_errors(obj)
        elif rt.storage_key == ("", "events"):
            errs += core_event_errors(obj, meta.get("namespace") or "")
        elif old is not None and rt.storage_key in (("", "configmaps"), ("", "secrets")):
            errs += immutable_data_errors(rt.kind, obj, old)
        elif serves_pod_template(rt.group, rt.kind):
            errs += workload_errors(rt.group, rt.kind, obj)
        elif rt.storage_key == ("", "services"):
            errs += service_errors(obj)
        if old is not None and rt.storage_key == CRD_KEY:
            errs += _crd_update_errors(obj, old)
        if errs:
            raise errors.invalid(rt.kind, rt.group, name, errs)
        return warnings

    def _prepare_new(self, rt: ResourceType, obj: dict[str, Any], manager: str, now: str) -> None:
        meta = obj["metadata"]
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            meta.pop(key, None)
        meta["uid"] = _new_uid()
        meta["creationTimestamp"] = now
        if rt.generation:
            meta["generation"] = 1
        if rt.storage_key == NS_KEY:
            labels = dict(meta.get("labels") or {})
            labels["kubernetes.io/metadata.name"] = meta["name"]
            meta["labels"] = labels
            obj["spec"] = {"finalizers": ["kubernetes"]}
            obj["status"] = {"phase": "Active"}
        if rt.storage_key == ("", "secrets") and not obj.get("type"):
            obj["type"] = "Opaque"
        if rt.builtin:
            prepare_builtin_create(rt.group, rt.kind, obj)
        if rt.storage_key == CRD_KEY:
            default_crd(obj)
            finalizers = list(meta.get("finalizers") or [])
            if CRD_FINALIZER not in finalizers:
                finalizers.append(CRD_FINALIZER)
            meta["finalizers"] = finalizers
            obj.pop("status", None)

    async def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        opts: WriteOptions,
        *,
        managed_by_apply: bool = False,
    ) -> WriteResult:
        obj = self._decode_check(rt, body)
        meta = obj["metadata"]
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and body_ns != namespace:
                raise errors.bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        if meta.get("resourceVersion"):
            raise errors.internal_error("resourceVersion should not be set on objects to be created")
        if not meta.get("name"):
            if meta.get("generateName"):
                meta["name"] = meta["generateName"] + "".join(random.choices(_GENERATE_CHARS, k=5))
            else:
                raise errors.invalid(
                    rt.kind,
                    rt.group,
                    "",
                    [FieldError("Required", "metadata.name", "name or generateName is required")],
                )
        warnings = self._field_checks(rt, obj, opts)
        if rt.has_status and not rt.builtin:
            obj.pop("status", None)
        now = now_rfc3339()
        self._prepare_new(rt, obj, opts.field_manager, now)
        warnings += self._validate(rt, obj, None)
        obj = self._to_storage(rt, obj)
        meta = obj["metadata"]
        name = meta["name"]
        for _attempt in range(2):
            self._check_namespace(rt, namespace, creating=True)
            if self.store.get(rt.storage_key, meta.get("namespace", ""), name) is not None:
                raise errors.already_exists(rt.plural, rt.group, name)
            if not managed_by_apply:
                obj = record_update(
                    None,
                    obj,
                    manager=opts.field_manager,
                    api_version=rt.group_version,
                    list_types=self.list_types_for(rt),
                    now=now,
                    ignored_fields=self._reset_fields(rt, None),
                )
            if rt.storage_key == SERVICE_KEY:  # after the managed fields: nobody owns what is allocated
                self._allocate(obj, None)
            if await self._admit("CREATE", rt, "", obj, None, opts):
                continue  # the store moved while a webhook ran: check again
            break
        stored = await self._for_storage(rt, obj)
        if self.store.get(rt.storage_key, meta.get("namespace", ""), name) is not None:
            raise errors.already_exists(rt.plural, rt.group, name)
        if opts.dry_run:
            return WriteResult(await self._answer(rt, stored, dry_run=True), 201, warnings)
        stored["metadata"]["resourceVersion"] = str(self.store.next_rv())
        self.store.commit(ADDED, rt.storage_key, stored, None)
        self._after_commit(rt, stored)
        return WriteResult(await self._answer(rt, stored), 201, warnings)

    async def _admit(
        self,
        operation: str,
        rt: ResourceType,
        subresource: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        opts: WriteOptions,
    ) -> bool:
        """Run validating webhooks, on objects in the request's version (`old` of a DELETE is the stored
        one). True when the store changed while they ran (the caller re-checks)."""
        configs = list(self.store.items(WEBHOOK_KEY))
        if not configs or rt.storage_key == WEBHOOK_KEY:
            return False
        before = self.store.rv
        converter = self.converter(rt)
        if operation == "DELETE" and old is not None:
            old = await self._in_request_version(rt, old)
        target = obj if obj is not None else old
        assert target is not None
        meta = target["metadata"]
        attrs = AdmissionAttributes(
            operation=operation,
            resource_type=rt,
            subresource=subresource,
            name=meta.get("name", ""),
            namespace=meta.get("namespace", ""),
            obj=obj,
            old_obj=old,
            dry_run=opts.dry_run,
            equivalent_types=[t for t in self.types.all() if t.storage_key == rt.storage_key and t is not rt],
            convert=None if converter is None else _admission_conversion(converter),
            options={
                "kind": {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}[operation],
                "apiVersion": "meta.k8s.io/v1",
                **({"fieldManager": opts.field_manager} if operation != "DELETE" else {}),
            },
        )
        await self.webhooks.validate(attrs, configs, self.namespace_labels)
        return self.store.rv != before

    # --- update ----------------------------------------------------------------------------------------

    async def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        opts: WriteOptions,
        subresource: str = "",
    ) -> WriteResult:
        obj = self._decode_check(rt, body)
        meta = obj["metadata"]
        _take_identity_from_url(rt, meta, name, namespace)
        warnings = self._field_checks(rt, obj, opts)
        ns = namespace if rt.namespaced else ""
        live = self.store.get(rt.storage_key, ns, name)
        if live is None:
            raise self._not_found(rt, name)
        rv = meta.get("resourceVersion")
        if not rv and not self._allows_unconditional_update(rt):
            raise errors.invalid(
                rt.plural,
                rt.group,
                name,
                [
                    FieldError(
                        "Invalid",
                        "metadata.resourceVersion",
                        "must be specified for an update",
                        raw_value="0x0",
                    )
                ],
            )
        stored = self._to_storage(rt, obj)
        return await self._write_update(
            rt,
            ns,
            name,
            lambda _live: stored,
            opts,
            subresource,
            precondition_rv=rv or None,
            warnings=warnings,
        )

    def _allocate(self, service: dict[str, Any], live: dict[str, Any] | None) -> None:
        """A Service's cluster IP and node ports (`service_allocation.py`); the live ones on an update."""
        existing = list(self.store.buckets.get(SERVICE_KEY, {}).values())  # unsorted: no sort per create
        try:
            if live is None:
                service_allocation.allocate(service, existing)
            else:
                service_allocation.allocate_on_update(service, live, existing)
        except service_allocation.RangeFull as exc:
            raise errors.internal_error(f"failed to allocate a serviceIP: {exc}") from exc

    @staticmethod
    def _allows_unconditional_update(rt: ResourceType) -> bool:
        return rt.builtin and rt.storage_key not in (CRD_KEY,)

    async def _write_update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        produce: Callable[[dict[str, Any]], dict[str, Any]],
        opts: WriteOptions,
        subresource: str,
        *,
        precondition_rv: str | None,
        warnings: list[str] | None = None,
        apply_manager: bool = False,
    ) -> WriteResult:
        """Read live, produce the new object from it, apply the update rules, admit and commit (with retries).
        `produce` and the rules see the live object in the request's version: for a webhook-converted kind, the
        copy converted for lists and watches (kube-apiserver updates from its watch cache's copy); the new
        object is converted to the storage version before it is compared with the live one (kube-apiserver
        compares the encoded objects), so a failing webhook fails the write before admission."""
        warnings = list(warnings or [])
        converter = self.converter(rt)
        for _attempt in range(8):
            live = self.store.get(rt.storage_key, ns, name)
            if live is None:
                raise self._not_found(rt, name)
            if precondition_rv is not None and precondition_rv != live["metadata"]["resourceVersion"]:
                raise errors.conflict(rt.plural, rt.group, name)
            current = live
            if converter is not None:
                current = await _converted(converter.cached_view(live, rt.version))
                if self.store.get(rt.storage_key, ns, name) is not live:
                    continue  # it moved while the webhook converted it
            new = produce(current)
            new = self._apply_update_rules(rt, current, new, subresource, opts, apply_manager, warnings)
            stored = new
            if converter is not None:
                stored = await _converted(converter.convert(new, converter.config.storage_version))
                if self.store.get(rt.storage_key, ns, name) is not live:
                    continue
                if _same_object(stored, live):  # (an object in an older storage version is written again)
                    return WriteResult(current, 200, warnings)
            elif _same_object(new, live):
                return WriteResult(self._view(rt, live), 200, warnings)
            if await self._admit("UPDATE", rt, subresource, new, current, opts):
                continue
            if opts.dry_run:
                return WriteResult(await self._answer(rt, stored, dry_run=True), 200, warnings)
            stored["metadata"]["resourceVersion"] = str(self.store.next_rv())
            if self._should_delete(rt, stored):
                self.store.commit(DELETED, rt.storage_key, stored, live)
                self._after_delete(rt, stored)
                return WriteResult(await self._answer(rt, stored), 200, warnings)
            self.store.commit(MODIFIED, rt.storage_key, stored, live)
            self._after_commit(rt, stored)
            return WriteResult(await self._answer(rt, stored), 200, warnings)
        raise errors.conflict(rt.plural, rt.group, name)

    def _apply_update_rules(
        self,
        rt: ResourceType,
        live: dict[str, Any],
        new: dict[str, Any],
        subresource: str,
        opts: WriteOptions,
        apply_manager: bool,
        warnings: list[str],
    ) -> dict[str, Any]:
        live_meta = live["metadata"]
        if subresource == "status":
            # Only status changes through /status; everything else is the live object's.
            status_obj = {k: v for k, v in live.items() if k != "status"}
            if "status" in new:
                status_obj["status"] = new["status"]
            meta = dict(live_meta)
            if "managedFields" in new["metadata"]:
                meta["managedFields"] = new["metadata"]["managedFields"]
            status_obj["metadata"] = meta
            new = status_obj
        elif subresource == "finalize":
            finalize_obj = {k: v for k, v in live.items() if k != "spec"}
            finalize_obj["spec"] = dict(live.get("spec") or {})
            finalize_obj["spec"]["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
            finalize_obj["metadata"] = dict(live_meta)
            new = finalize_obj
        else:
            new = dict(new)
            meta = dict(new["metadata"])
            new["metadata"] = meta
            if rt.has_status:
                if "status" in live:
                    new["status"] = live["status"]
                else:
                    new.pop("status", None)
            if rt.storage_key == SERVICE_KEY:
                self._allocate(new, live)
            if rt.storage_key == NS_KEY:
                new["spec"] = live.get("spec", {})
                labels = dict(meta.get("labels") or {})
                labels["kubernetes.io/metadata.name"] = live_meta["name"]
                meta["labels"] = labels
        meta = new["metadata"]
        for key in (
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "generation",
        ):
            if key in live_meta:
                meta[key] = live_meta[key]
            else:
                meta.pop(key, None)
        if "managedFields" not in meta and "managedFields" in live_meta:
            meta["managedFields"] = live_meta["managedFields"]
        meta["resourceVersion"] = live_meta["resourceVersion"]
        if rt.namespaced:
            meta["namespace"] = live_meta.get("namespace", "")
        if live_meta.get("deletionTimestamp"):
            added = [f for f in meta.get("finalizers") or [] if f not in (live_meta.get("finalizers") or [])]
            if added:
                raise errors.invalid(
                    rt.kind,
                    rt.group,
                    live_meta["name"],
                    [
                        FieldError(
                            "Forbidden",
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is being deleted, found new "
                            f"finalizers {_go_string_slice(added)}",
                        )
                    ],
                )
        if rt.generation and _spec_changed(live, new):
            meta["generation"] = int(live_meta.get("generation", 0) or 0) + 1
        if subresource == "" or (subresource == "status" and rt.schema is not None):
            # A custom resource's status write validates its status against the schema and the whole object
            # against the rules (the status strategy's ValidateStatusUpdate), an unchanged spec ratcheted.
            for warning in self._validate(rt, new, live, subresource):
                if warning not in warnings:
                    warnings.append(warning)
        if not apply_manager:
            new = record_update(
                live,
                new,
                manager=opts.field_manager,
                api_version=rt.group_version,
                list_types=self.list_types_for(rt),
                now=now_rfc3339(),
                subresource=subresource or None,
                ignored_fields=self._reset_fields(rt, subresource or None),
            )
        return new

    @staticmethod
    def _should_delete(rt: ResourceType, obj: dict[str, Any]) -> bool:
        meta = obj["metadata"]
        if not meta.get("deletionTimestamp") or meta.get("finalizers"):
            return False
        return not (rt.storage_key == NS_KEY and (obj.get("spec") or {}).get("finalizers"))

    # --- patch and apply -------------------------------------------------------------------------------

    async def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        raw: bytes,
        opts: WriteOptions,
        subresource: str = "",
    ) -> WriteResult:
        ctype = content_type.split(";")[0].strip().lower()
        accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
        if rt.builtin:
            accepted.append(STRATEGIC_PATCH)
        if ctype not in accepted:
            raise errors.unsupported_media_type(accepted)
        if ctype != APPLY_PATCH and opts.force is not None:
            raise errors.invalid(
                "PatchOptions",
                "meta.k8s.io",
                "",
                [FieldError("Forbidden", "force", "may not be specified for non-apply patch")],
            )
        body = _decode_patch_body(raw, ctype)
        ns = namespace if rt.namespaced else ""
        if ctype == APPLY_PATCH:
            return await self._apply(rt, namespace, name, body, opts, subresource)
        if self.store.get(rt.storage_key, ns, name) is None:
            raise self._not_found(rt, name)
        precondition: str | None = None
        if isinstance(body, dict):
            precondition = ((body.get("metadata") or {}) if isinstance(body.get("metadata"), dict) else {}).get(
                "resourceVersion"
            )
        warnings: list[str] = []

        def produce(live: dict[str, Any]) -> dict[str, Any]:
            base = self._view(rt, live)
            if ctype == JSON_PATCH:
                patched = apply_json_patch(base, body)
            elif ctype == MERGE_PATCH:
                patched = _merge_patch_sharing_managed_fields(base, body)
            else:
                patched = apply_strategic_merge_patch(base, body)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patched object must be a JSON object")
            patched = self._decode_check(rt, patched)
            _check_patched_identity(patched["metadata"], name, ns)
            warnings[:] = self._field_checks(rt, patched, opts)
            return self._to_storage(rt, patched)

        return await self._write_update(
            rt, ns, name, produce, opts, subresource, precondition_rv=precondition, warnings=warnings
        )

    async def _apply(
        self, rt: ResourceType, namespace: str, name: str, body: Any, opts: WriteOptions, subresource: str
    ) -> WriteResult:
        if not opts.field_manager or opts.field_manager == default_manager(None):
            raise missing_field_manager_error()
        applied = self._decode_check(rt, body)
        meta = applied["metadata"]
        _take_identity_from_url(rt, meta, name, namespace)
        warnings = self._field_checks(rt, applied, opts, defaults=False)
        ns = namespace if rt.namespaced else ""
        now = now_rfc3339()
        force = bool(opts.force)
        live = self.store.get(rt.storage_key, ns, name)
        if live is None:
            if subresource:
                raise self._not_found(rt, name)
            created = server_side_apply(
                None,
                applied,
                manager=opts.field_manager,
                force=force,
                api_version=rt.group_version,
                list_types=self.list_types_for(rt),
                now=now,
                ignored_fields=self._reset_fields(rt, None),
            )
            result = await self.create(rt, namespace, created, opts, managed_by_apply=True)
            result.warnings = warnings + result.warnings
            return result
        precondition = meta.get("resourceVersion")

        def produce(live_obj: dict[str, Any]) -> dict[str, Any]:
            merged = server_side_apply(
                live_obj,
                applied,
                manager=opts.field_manager,
                force=force,
                api_version=rt.group_version,
                list_types=self.list_types_for(rt),
                now=now,
                subresource=subresource or None,
                ignored_fields=self._reset_fields(rt, subresource or None),
            )
            return self._apply_defaults(rt, merged)

        return await self._write_update(
            rt,
            ns,
            name,
            produce,
            opts,
            subresource,
            precondition_rv=precondition,
            warnings=warnings,
            apply_manager=True,
        )

    # --- delete ----------------------------------------------------------------------------------------

    async def delete(
        self, rt: ResourceType, namespace: str, name: str, options: dict[str, Any], opts: WriteOptions
    ) -> WriteResult:
        ns = namespace if rt.namespaced else ""
        live = self.store.get(rt.storage_key, ns, name)
        if live is None:
            raise self._not_found(rt, name)
        if rt.storage_key == NS_KEY and name in PROTECTED_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")
        pre = options.get("preconditions") or {}
        meta = live["metadata"]
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(
                rt.plural,
                rt.group,
                name,
                "Precondition failed: ResourceVersion in precondition: "
                f"{pre['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        policy = options.get("propagationPolicy")
        if options.get("orphanDependents") is True and not policy:
            policy = "Orphan"
        if policy not in (None, "", "Background", "Foreground", "Orphan"):
            raise errors.invalid(
                "DeleteOptions",
                "meta.k8s.io",
                "",
                [
                    FieldError(
                        "NotSupported",
                        "propagationPolicy",
                        value=policy,
                        supported=("Foreground", "Background", "Orphan", "nil"),
                    )
                ],
            )
        if await self._admit("DELETE", rt, "", None, live, opts):
            live = self.store.get(rt.storage_key, ns, name)
            if live is None:
                raise self._not_found(rt, name)
            meta = live["metadata"]
        finalizers = list(meta.get("finalizers") or [])
        graceful = bool(finalizers) or policy in ("Foreground", "Orphan") or rt.storage_key == NS_KEY
        if not graceful:
            if opts.dry_run:
                return WriteResult(self._deleted_status(rt, live), 200)
            gone = dict(live)
            gone["metadata"] = dict(meta, resourceVersion=str(self.store.next_rv()))
            self.store.commit(DELETED, rt.storage_key, gone, live)
            self._after_delete(rt, gone)
            return WriteResult(self._deleted_status(rt, gone), 200)
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in finalizers:
            finalizers.append("orphan")
        if meta.get("deletionTimestamp") and finalizers == list(meta.get("finalizers") or []):
            return WriteResult(await self._answer(rt, live), 200)
        new = dict(live)
        new_meta = dict(meta, finalizers=finalizers) if finalizers else dict(meta)
        new["metadata"] = new_meta
        if not meta.get("deletionTimestamp"):
            new_meta["deletionTimestamp"] = now_rfc3339()
            new_meta["deletionGracePeriodSeconds"] = 0
            if int(meta.get("generation", 0) or 0) > 0:
                new_meta["generation"] = int(meta["generation"]) + 1
        if rt.storage_key == NS_KEY:
            new["status"] = dict(live.get("status") or {}, phase="Terminating")
        if opts.dry_run:
            return WriteResult(await self._answer(rt, new, dry_run=True), 200)
        new_meta["resourceVersion"] = str(self.store.next_rv())
        if self._should_delete(rt, new):
            self.store.commit(DELETED, rt.storage_key, new, live)
            self._after_delete(rt, new)
            return WriteResult(self._deleted_status(rt, new), 200)
        self.store.commit(MODIFIED, rt.storage_key, new, live)
        self._after_commit(rt, new)
        return WriteResult(await self._answer(rt, new), 200)

    @staticmethod
    def _deleted_status(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
        details: dict[str, Any] = {"name": obj["metadata"]["name"]}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = obj["metadata"].get("uid", "")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    async def delete_collection(
        self,
        rt: ResourceType,
        namespace: str,
        query: Mapping[str, str],
        options: dict[str, Any],
        opts: WriteOptions,
    ) -> dict[str, Any]:
        items, _, _, _ = await self.list_objects(rt, namespace, {k: v for k, v in query.items() if k != "limit"})
        deleted: list[dict[str, Any]] = []
        for obj in items:
            meta = obj["metadata"]
            try:
                result = await self.delete(rt, meta.get("namespace", ""), meta["name"], options, opts)
            except APIError as exc:
                if exc.code == 404:
                    continue
                raise
            deleted.append(result.obj if result.obj.get("kind") != "Status" else obj)
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.group_version,
            "metadata": {"resourceVersion": str(self.store.rv)},
            "items": deleted,
        }

    # --- CRDs ------------------------------------------------------------------------------------------

    def _after_commit(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.storage_key == CRD_KEY and not obj["metadata"].get("deletionTimestamp"):
            self._establish(obj)

    def _after_delete(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt.storage_key == CRD_KEY:
            spec = obj.get("spec") or {}
            key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            self.types.set_crd(obj["metadata"]["name"], [])
            self.store.drop_kind(key)
            self._converters.pop(key, None)
            self._crd_changed()

    def _crd_changed(self) -> None:
        self._schemas.clear()
        self._unserved_schemas.clear()
        for callback in self.on_crd_change:
            callback()

    def _sync_crd_types(self, crd: dict[str, Any]) -> None:
        self.types.set_crd(crd["metadata"]["name"], types_from_crd(crd))
        self._sync_converter(crd)
        self._crd_changed()

    def _establish(self, crd: dict[str, Any]) -> None:
        """Accept the names, mark the CRD Established and start serving it (the real server takes ms to 1 s)."""
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        status = dict(crd.get("status") or {})
        now = now_rfc3339()
        conditions = {c.get("type"): c for c in status.get("conditions") or []}

        def condition(type_: str, reason: str, message: str) -> dict[str, Any]:
            prior: dict[str, Any] | None = conditions.get(type_)
            if prior and prior.get("status") == "True" and prior.get("reason") == reason:
                return prior
            return {
                "type": type_,
                "status": "True",
                "lastTransitionTime": now,
                "reason": reason,
                "message": message,
            }

        stored = list(status.get("storedVersions") or [])
        for version in spec.get("versions") or []:
            if version.get("storage") and version.get("name") not in stored:
                stored.append(version.get("name"))
        desired = {
            "conditions": [
                condition("NamesAccepted", "NoConflicts", "no conflicts found"),
                condition("Established", "InitialNamesAccepted", "the initial names have been accepted"),
            ],
            "acceptedNames": names,
            "storedVersions": stored,
        }
        self._sync_crd_types(crd)
        if crd.get("status") == desired:
            return
        new = dict(crd, status=desired)
        new["metadata"] = dict(crd["metadata"], resourceVersion=str(self.store.next_rv()))
        self.store.commit(MODIFIED, CRD_KEY, new, crd)


class _StandIn:
    """Takes the place of the live managedFields while a merge patch copies the rest of the object."""


_LIVE_MANAGED_FIELDS = _StandIn()


def _take_identity_from_url(rt: ResourceType, meta: dict[str, Any], name: str, namespace: str) -> None:
    """A PUT or apply body may omit its name and namespace (the URL's are used) but may not contradict them."""
    if meta.get("name") and meta["name"] != name:
        raise errors.bad_request(f"the name of the object ({meta['name']}) does not match the name on the URL ({name})")
    meta["name"] = name
    if rt.namespaced:
        if meta.get("namespace") and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace


def _check_patched_identity(meta: dict[str, Any], name: str, namespace: str) -> None:
    """Upstream's checks on a patched object: its namespace follows the request's, its name must be the URL's."""
    object_namespace = meta.get("namespace") or ""
    if object_namespace != namespace:
        if not object_namespace:
            meta["namespace"] = namespace
        elif not namespace:
            meta.pop("namespace", None)  # a cluster-scoped object carries no namespace
        else:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
    object_name = meta.get("name") or ""
    if not object_name:
        raise errors.bad_request(
            f"the name of the object ({name} based on URL) was undeterminable: name must be provided"
        )
    if object_name != name:
        raise errors.bad_request(f"the name of the object ({object_name}) does not match the name on the URL ({name})")


def _merge_patch_sharing_managed_fields(base: dict[str, Any], patch: Any) -> Any:
    """`apply_merge_patch`, sharing the live `metadata.managedFields` instead of copying it when the patch
    leaves it alone: nothing on the write path changes it in place (the field manager re-encodes it), and
    the field manager then recognises the entries as the live ones without comparing them."""
    meta = base.get("metadata")
    entries = meta.get("managedFields") if isinstance(meta, dict) else None
    patch_meta = patch.get("metadata") if isinstance(patch, dict) else None
    if (
        not isinstance(meta, dict)
        or not isinstance(entries, list)
        or not isinstance(patch, dict)
        or (patch_meta is not None and not (isinstance(patch_meta, dict) and "managedFields" not in patch_meta))
    ):
        return apply_merge_patch(base, patch)
    stand_in = dict(base)
    stand_in["metadata"] = dict(meta, managedFields=_LIVE_MANAGED_FIELDS)  # same key position
    patched = apply_merge_patch(stand_in, patch)
    patched_meta = patched.get("metadata") if isinstance(patched, dict) else None
    if isinstance(patched_meta, dict) and patched_meta.get("managedFields") is _LIVE_MANAGED_FIELDS:
        patched_meta["managedFields"] = entries
    return patched


def _admission_conversion(
    converter: WebhookConverter,
) -> Callable[[dict[str, Any], ResourceType], Awaitable[dict[str, Any]]]:
    """How admission converts an object for a webhook that matched another version; a failure is an internal
    error there (kube-apiserver's admission wraps it so)."""

    async def convert(obj: dict[str, Any], version: ResourceType) -> dict[str, Any]:
        try:
            return await converter.convert(obj, version.version)
        except ConversionError as exc:
            raise errors.internal_error(str(exc)) from None

    return convert


async def _converted(conversion: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """A conversion's result; its failure answered as kube-apiserver answers it: 500, the message alone."""
    try:
        return await conversion
    except ConversionError as exc:
        raise APIError(500, "", str(exc)) from None


def _new_uid() -> str:
    """A random (version 4) UUID, as `str(uuid.uuid4())` spells it, without building a UUID object."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _same_object(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """A no-op write: equal except for managedFields timestamps."""
    if a is b:
        return True
    if a.keys() != b.keys():
        return False
    for key in a:
        if key == "metadata":
            continue
        if a[key] != b[key]:
            return False
    ma, mb = a["metadata"], b["metadata"]
    if {k: v for k, v in ma.items() if k != "managedFields"} != {k: v for k, v in mb.items() if k != "managedFields"}:
        return False
    return _strip_times(ma.get("managedFields")) == _strip_times(mb.get("managedFields"))


def _strip_times(entries: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    return [{k: v for k, v in e.items() if k != "time"} for e in entries or []]


def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    keys = (set(old) | set(new)) - {"metadata", "status", "apiVersion", "kind"}
    return any(old.get(k) != new.get(k) for k in keys)


def _go_string_slice(items: list[str]) -> str:
    """Go's `%#v` of a sorted `[]string`, as kube-apiserver prints the new finalizers (measured: docs/fidelity.md)."""
    return "[]string{" + ", ".join(orjson.dumps(item).decode() for item in sorted(items)) + "}"


def _go_json_type(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "null"


def _decode_patch_body(raw: bytes, ctype: str) -> Any:
    if ctype == APPLY_PATCH:
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            import yaml

            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                raise errors.bad_request(f"error decoding YAML: {exc}") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise errors.bad_request(f"error decoding patch: {exc}") from None


def _b64encode(raw: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _b64decode(token: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _events_v1_errors(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if not obj.get("eventTime"):
        errs.append(FieldError("Required", "eventTime", ""))
    for key in ("reportingController", "reportingInstance", "action", "reason"):
        value = obj.get(key) or ""
        if not value and key != "reason":
            errs.append(FieldError("Required", key, ""))
        elif len(value) > 128:
            errs.append(FieldError("Invalid", key, "can have at most 128 characters", value))
    if not obj.get("reason"):
        errs.append(FieldError("Required", "reason", ""))
    note = obj.get("note") or ""
    if len(note) > 1024:
        errs.append(FieldError("TooLong", "note", "may not be more than 1024 bytes"))
    if obj.get("type") not in ("Normal", "Warning"):
        errs.append(FieldError("Invalid", "type", "has invalid value: " + str(obj.get("type") or ""), obj.get("type")))
    return errs


def _crd_update_errors(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if new_spec.get("group") != old_spec.get("group"):
        errs.append(FieldError("Invalid", "spec.group", "field is immutable", new_spec.get("group")))
    if (new_spec.get("names") or {}).get("plural") != (old_spec.get("names") or {}).get("plural"):
        errs.append(
            FieldError(
                "Invalid",
                "spec.names.plural",
                "field is immutable",
                (new_spec.get("names") or {}).get("plural"),
            )
        )
    if new_spec.get("scope") != old_spec.get("scope"):
        errs.append(FieldError("Invalid", "spec.scope", "field is immutable", new_spec.get("scope")))
    return errs
