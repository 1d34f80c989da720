"""Controller settings: environment (prefix `OMECTL_`), an optional YAML config file, then command-line flags."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import AliasChoices, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from omectl.problems import read_problem, validation_problems, yaml_problem

if TYPE_CHECKING:
    from omectl.fleet.leases import LeaseTimings


DEFAULT_WEBHOOK_PORT = 9443  # controller-runtime's webhook port, and the Deployment's


DEFAULT_TRACE_FILE_MAX_BYTES = 64 * 2**20
"""A span takes 1 to 3 KB and a busy fleet makes thousands a second: unbounded, the file would fill the pod's 2Gi
emptyDir within minutes (and get the pod evicted)."""


class Settings(BaseSettings):
    """Everything `omectl run` can be told. Flags win over the config file, which wins over the environment."""

    model_config = SettingsConfigDict(env_prefix="OMECTL_", extra="forbid")

    clusters_dir: Path = Field(
        default=Path("clusters"),
        description="Directory of ClusterRegistration files (and, without a hub, FleetRuntimes).",
    )
    fleet_state_dir: Path | None = Field(
        default=None,
        description="Without a hub: where the FleetRuntimes' status, revisions, events and requests are kept "
        "(default: <clusters_dir>/.omectl-state).",
    )
    hub_kubeconfig: Path | None = Field(
        None, description="Read registrations from Secrets labelled omectl.io/cluster=true in this hub cluster."
    )
    hub_namespace: str = Field(default="omectl-system", description="Namespace of the registration Secrets in the hub.")
    concurrency: int = Field(default=16, ge=1, le=1024, description="Reconciles running at once across the fleet.")
    cluster_concurrency: int | None = Field(
        default=None, ge=1, le=1024, description="Reconciles of one cluster running at once (default: concurrency)."
    )
    freeze_heap: bool = Field(
        default=True,
        description="After start and after each cluster's caches have synced, collect the young garbage and freeze "
        "what survives, and freeze the survivors of each full collection at its end, so the collector's full passes "
        "skip it (they hold the event loop); every 10 minutes of churn one full pass thaws it all first.",
    )
    step_timing: bool = Field(
        default=True,
        description="Observe each reconcile's longest hold of the event loop (omectl_reconcile_longest_step_seconds).",
    )
    slow_step_seconds: float = Field(
        default=0.0,
        ge=0,
        description="Log each reconcile step that holds the event loop this long, with the code it ran (0: off; "
        "a sampling thread runs while it is on).",
    )
    edit_workers: int | None = Field(
        default=None,
        ge=0,
        le=1023,
        description="Of the concurrency, reconciles kept for live edits (the edit lane): fan-outs and resyncs never "
        "take them (default: one in eight; 0: none).",
    )
    trace_file: Path = Field(
        default=Path(".omectl/traces.jsonl"), description="OTLP-JSON lines file when no endpoint is set."
    )
    trace_file_max_bytes: int = Field(
        default=DEFAULT_TRACE_FILE_MAX_BYTES,
        ge=0,
        description="Size at which the trace file moves to <file>.1 (replacing an older one) and a new one starts, "
        "so the two hold at most about twice this (0: never rotated).",
    )
    otlp_endpoint: str | None = Field(
        default=None, description="OTLP/HTTP endpoint; OTEL_EXPORTER_OTLP_ENDPOINT also works."
    )
    webhook_host: str = Field(default="127.0.0.1", description="Address the admission webhook server listens on.")
    webhook_port: int = Field(
        default=DEFAULT_WEBHOOK_PORT,
        ge=0,
        le=65535,
        description="Port of the webhook server (0: any free port, for tests; a restart keeps its URL otherwise).",
    )
    webhook_url: str | None = Field(
        None, description="Base URL clusters call the webhooks on (default: https://<host>:<port>)."
    )
    webhook_cert_file: Path | None = Field(default=None, description="TLS certificate (PEM); generated when unset.")
    webhook_key_file: Path | None = Field(default=None, description="TLS key (PEM) matching webhook_cert_file.")
    webhook_ca_file: Path | None = Field(
        default=None, description="CA bundle clusters use to verify the webhook server."
    )
    install_webhooks: bool = Field(
        default=True, description="Install a ValidatingWebhookConfiguration into each cluster."
    )
    webhook_failure_policy: str = Field(default="Fail", description="failurePolicy of the installed webhooks.")
    resync_seconds: float = Field(default=0.0, ge=0, description="Periodic full re-reconcile (0: off).")
    metrics_host: str = Field(default="127.0.0.1", description="Address of the /metrics, /healthz, /readyz server.")
    metrics_port: int = Field(
        default=0, ge=-1, le=65535, description="Port of the metrics and health server (0: any free port; -1: off)."
    )
    readiness_grace_seconds: float = Field(
        default=30.0, ge=0, description="A cluster disconnected this long no longer holds /readyz back."
    )
    log_level: str = Field(default="INFO", description="DEBUG, INFO, WARNING or ERROR.")
    log_format: str = Field(default="text", description="text or json (one JSON object per line).")

    # --- cluster ownership (omectl.fleet.sharding): one holder per member, in a Lease in that member ------------
    lease_namespace: str = Field(
        default="omectl-system", description="Namespace of the ownership Lease in every member (deploy/member's)."
    )
    lease_duration: float = Field(default=15.0, gt=0, description="Lease duration, s (client-go: 15).")
    lease_renew_deadline: float = Field(default=10.0, gt=0, description="Writes stop this long after a renewal, s.")
    lease_retry_period: float = Field(default=2.0, gt=0, description="Renew and rebalance every, s (client-go: 2).")
    # --- high availability: clusters shared across replicas ---------------------------------------------------
    ha: bool = Field(default=False, description="Share clusters across replicas (off: this one takes every cluster).")
    replica_id: str | None = Field(
        default=None, description="This process's stable id (default: pod_name, else the host name)."
    )
    # --- read from the environment without the OMECTL_ prefix, as a Deployment and upstream AIM set them ---------
    pod_name: str | None = Field(
        default=None,
        validation_alias=AliasChoices("pod_name", "POD_NAME"),
        description="The pod's name (POD_NAME, from the downward API): the default replica id, the host in Leases.",
    )
    image_registry_mirrors: dict[str, str] = Field(
        default_factory=dict,
        description="Registry host -> base URL the controller reads that registry's images from instead of "
        'https://<host> (an AIM model\'s image labels), e.g. {"ghcr.io": "http://127.0.0.1:5000"} for the simulated '
        "fleet's registry; in the environment as JSON.",
    )
    image_registry_timeout_seconds: float = Field(
        default=30.0, gt=0, description="Limit on one read of an image's labels from its registry."
    )
    aim_system_namespace: str = Field(
        default="aim-system",
        validation_alias=AliasChoices("aim_system_namespace", "AIM_SYSTEM_NAMESPACE"),
        description="The AIM operator namespace (AIM_SYSTEM_NAMESPACE): cluster-scoped AIM kinds resolve there.",
    )
    aim_degradation_threshold_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How long an AIMArtifact's infrastructure error (a lost PVC, an evicted Job pod) may last before "
        "a Ready artifact turns Degraded: upstream's grace period (10 s).",
    )
    ha_kubeconfig: Path | None = Field(
        default=None, description="Cluster holding the membership Leases (default: hub_kubeconfig, else $KUBECONFIG)."
    )
    ha_context: str | None = Field(default=None, description="Context of ha_kubeconfig.")
    ha_namespace: str = Field(default="omectl-system", description="Namespace of the membership Leases.")

    @field_validator("aim_system_namespace", mode="before")
    @classmethod
    def _aim_system_namespace(cls, value: Any) -> Any:
        return value or "aim-system"  # set but empty counts as unset, as it always has

    @field_validator("replica_id")
    @classmethod
    def _replica_id(cls, value: str | None) -> str | None:
        from omectl.fleet.leases import validate_replica_id

        problem = validate_replica_id(value) if value is not None else None
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _edit_workers_below_concurrency(self) -> Settings:
        if self.edit_workers is not None and self.edit_workers >= self.concurrency:
            raise ValueError(f"edit_workers ({self.edit_workers}) must be below concurrency ({self.concurrency})")
        return self

    @model_validator(mode="after")
    def _lease_timings(self) -> Settings:
        self.lease_timings()  # raises ValueError naming the rule broken
        return self

    def lease_timings(self) -> LeaseTimings:
        from omectl.fleet.leases import LeaseTimings

        return LeaseTimings(self.lease_duration, self.lease_renew_deadline, self.lease_retry_period)

    @field_validator("webhook_failure_policy")
    @classmethod
    def _policy(cls, value: str) -> str:
        if value not in ("Fail", "Ignore"):
            raise ValueError("must be Fail or Ignore")
        return value

    @field_validator("log_level")
    @classmethod
    def _level(cls, value: str) -> str:
        if value.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            raise ValueError("must be DEBUG, INFO, WARNING or ERROR")
        return value.upper()

    @field_validator("log_format")
    @classmethod
    def _format(cls, value: str) -> str:
        if value.lower() not in ("text", "json"):
            raise ValueError("must be text or json")
        return value.lower()

    @classmethod
    def load(cls, config_file: Path | None = None, **overrides: Any) -> Settings:
        """Environment < config file < explicit overrides (None overrides are ignored).

        Raises SettingsError, one line naming the config file and each setting that is wrong.
        """
        values: dict[str, Any] = {}
        where = f"config file {config_file}: " if config_file is not None else ""
        if config_file is not None:
            try:
                loaded = yaml.safe_load(config_file.read_text(encoding="utf-8"))
            except FileNotFoundError:
                raise SettingsError(f"config file {config_file} does not exist") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise SettingsError(f"{where}cannot read it: {read_problem(exc)}") from None
            except yaml.YAMLError as exc:
                raise SettingsError(f"{where}not valid YAML: {yaml_problem(exc)}") from None
            if loaded is None:
                loaded = {}
            if not isinstance(loaded, dict):
                raise SettingsError(f"{where}must hold a mapping of settings, not a {type(loaded).__name__}")
            values.update({str(k).replace("-", "_"): v for k, v in loaded.items()})
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise SettingsError(where + validation_problems(exc.errors(), unknown="unknown setting")) from None


class SettingsError(ValueError):
    """Settings that cannot be used; `str(exc)` is the one-line message for the operator."""
