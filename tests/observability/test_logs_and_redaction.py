"""Structured logs (fields, trace ids, formats) and the redaction helpers, without a cluster."""

from __future__ import annotations

import io
import json
import logging
import ssl
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider

from omectl.observability import logs
from omectl.observability.redact import (
    REDACTED,
    SecretRegistry,
    is_secret_name,
    kubeconfig_secrets,
    redact_object,
    register_kubeconfig_secrets,
    scrub,
    without_userinfo,
)
from omectl.tls import CertificateAuthority, server_ssl_context

log = logging.getLogger("omectl.test.observability")


@pytest.fixture
def captured() -> Iterator[tuple[io.StringIO, logging.Handler]]:
    stream = io.StringIO()
    root = logging.getLogger()
    level = root.level
    handler = logs.configure_logging("INFO", "json", stream)
    try:
        yield stream, handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


def test_json_lines_carry_the_bound_object_and_the_current_trace(captured: tuple[io.StringIO, logging.Handler]) -> None:
    stream, _ = captured
    tracer = TracerProvider().get_tracer("test")
    token = logs.bind(cluster="c-1", kind="ome.io/ServingRuntime", namespace="ns", name="rt")
    try:
        with tracer.start_as_current_span("reconcile") as span:
            logs.note_span(span)
            log.info("inside %s", "the span")
        log.warning("after the span")
    finally:
        logs.unbind(token)
    log.info("outside", extra={"cluster": "c-2", "object_name": "x"})
    inside, after, outside = lines(stream)
    trace_id = format(span.get_span_context().trace_id, "032x")
    assert inside["message"] == "inside the span"
    assert inside["level"] == "INFO" and inside["logger"] == "omectl.test.observability"
    assert {k: inside[k] for k in ("cluster", "kind", "namespace", "name", "trace_id")} == {
        "cluster": "c-1",
        "kind": "ome.io/ServingRuntime",
        "namespace": "ns",
        "name": "rt",
        "trace_id": trace_id,
    }
    assert inside["span_id"] == format(span.get_span_context().span_id, "016x")
    assert after["trace_id"] == trace_id and after["name"] == "rt" and "span_id" not in after  # noted for failures
    assert outside["cluster"] == "c-2" and outside["name"] == "x" and "trace_id" not in outside
    assert "kind" not in outside  # nothing bound any more


def test_text_lines_and_exceptions_are_scrubbed(captured: tuple[io.StringIO, logging.Handler]) -> None:
    stream, handler = captured
    handler.setFormatter(logs.TextFormatter())
    register_kubeconfig_secrets({"users": [{"name": "u", "user": {"token": "kc-token-0123456789"}}]})
    token = logs.bind(cluster="c-1", kind="ome.io/InferenceService", namespace="ns", name="isvc")
    try:
        raise RuntimeError('422 Invalid: [{"name":"HF_TOKEN","value":"hf_leaked_value"}] with kc-token-0123456789')
    except RuntimeError:
        log.exception("apply failed: Authorization: Bearer kc-token-0123456789")
    finally:
        logs.unbind(token)
    text = stream.getvalue()
    assert "hf_leaked_value" not in text and "kc-token-0123456789" not in text
    assert REDACTED in text
    first = text.splitlines()[0]
    assert first.endswith("[cluster=c-1 kind=ome.io/InferenceService object=ns/isvc]")
    assert "RuntimeError: 422 Invalid" in text  # the traceback is kept, scrubbed


def test_configure_logging_replaces_only_its_own_handler() -> None:
    root = logging.getLogger()
    level, before = root.level, list(root.handlers)
    first = logs.configure_logging("DEBUG", "json", io.StringIO())
    second = logs.configure_logging("WARNING", "text", io.StringIO())
    try:
        assert first not in root.handlers and second in root.handlers
        assert [h for h in root.handlers if h is not second] == before
        assert root.level == logging.WARNING
        with pytest.raises(ValueError):
            logs.configure_logging("INFO", "xml")  # type: ignore[arg-type]
    finally:
        root.removeHandler(second)
        root.setLevel(level)


def test_secret_names_env_values_and_credentials_are_redacted() -> None:
    assert all(is_secret_name(n) for n in ("HF_TOKEN", "api_key", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD"))
    assert not any(is_secret_name(n) for n in ("HF_HOME", "MODEL_PATH", "TMPDIR"))
    spec = {
        "engineConfig": {
            "runner": {
                "env": [
                    {"name": "HF_TOKEN", "value": "hf_value"},
                    {"name": "HF_HOME", "value": "/tmp/.hf"},
                    {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
                ],
                "args": ["--tp-size=1", "--api-key=sk-value"],
            }
        }
    }
    redacted = redact_object(spec)
    runner = redacted["engineConfig"]["runner"]
    assert runner["env"] == [
        {"name": "HF_TOKEN", "value": REDACTED},
        {"name": "HF_HOME", "value": "/tmp/.hf"},
        {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token"}}},
    ]
    assert runner["args"] == ["--tp-size=1", f"--api-key={REDACTED}"]
    assert spec["engineConfig"]["runner"]["env"][0]["value"] == "hf_value"  # a copy; the input is untouched
    kubeconfig = {
        "users": [
            {"name": "a", "user": {"token": "t0k3n", "client-key-data": "S0VZ"}},
            {"name": "b", "user": {"auth-provider": {"config": {"id-token": "idt", "client-id": "public"}}}},
            {
                "name": "c",
                "user": {"exec": {"env": [{"name": "VAULT_TOKEN", "value": "vt"}, {"name": "X", "value": "y"}]}},
            },
        ]
    }
    assert sorted(kubeconfig_secrets(kubeconfig)) == ["S0VZ", "idt", "t0k3n", "vt"]
    assert redact_object(kubeconfig)["users"][0]["user"] == {"token": REDACTED, "client-key-data": REDACTED}


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer abc.def-123", "abc.def-123"),
        ('{"token": "s3cr3t-value"}', "s3cr3t-value"),
        ("password=hunter2 user=x", "hunter2"),
        ("HF_TOKEN=hf_abcdef other", "hf_abcdef"),
        ("{'name': 'MY_PASSWORD', 'value': 'pw123456'}", "pw123456"),
        ("env:\n- name: HF_TOKEN\n  value: hf_yaml_value\n", "hf_yaml_value"),
    ],
)
def test_scrub_masks_secret_shapes(text: str, secret: str) -> None:
    assert secret not in scrub(text)
    assert REDACTED in scrub(text)


def test_scrub_leaves_ordinary_text_alone() -> None:
    text = "reconcile of c-1:ome.io/ServingRuntime:ns/rt failed (retry 2): GET /apis/ome.io/v1beta1 404 NotFound"
    assert scrub(text) == text


def test_known_secrets_are_replaced_longest_first_and_bounded() -> None:
    registry = SecretRegistry(max_values=2)
    registry.add("Bearer abcdefgh")
    registry.add("abcdefgh-longer")
    assert registry.scrub("x abcdefgh-longer y abcdefgh") == f"x {REDACTED} y {REDACTED}"
    registry.add("third-secret")
    assert "abcdefgh" not in registry and len(registry) == 2
    registry.add("abc")  # too short to be told from ordinary text
    assert "abc" not in registry


def test_the_webhook_server_speaks_tls_1_2_or_newer() -> None:
    ca = CertificateAuthority.generate("test-ca")
    context = server_ssl_context(ca.issue(["localhost"]))
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2
    assert context.protocol == ssl.PROTOCOL_TLS_SERVER


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://admin:PASS@10.0.0.1:6443", "https://10.0.0.1:6443"),
        ("https://admin@host.example/base/path", "https://host.example/base/path"),
        ("https://user:p@ss@[fd00::1]:6443", "https://[fd00::1]:6443"),  # the last @ ends the userinfo
        ("https://host.example:6443/a@b", "https://host.example:6443/a@b"),  # an @ in the path is not userinfo
        ("https://host.example", "https://host.example"),
        ("not a url", "not a url"),
    ],
)
def test_urls_lose_their_userinfo(url: str, shown: str) -> None:
    assert without_userinfo(url) == shown
