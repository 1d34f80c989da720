"""Path templates: the spec's examples, upstream's examples under RFC 3986 encoding, encoding, collapsing, the
200-character limit, and every way a render fails."""

from __future__ import annotations

from typing import Any

import pytest

from omectl.core.aim.paths import (
    DEFAULT_PATH_TEMPLATE,
    PATH_TEMPLATE_INVALID,
    PathTemplateError,
    encode_segment,
    path_template,
    render_path,
    service_path,
    validate_path_template,
)

SPEC_CONFIG = {
    "routing": {
        "enabled": True,
        "gatewayRef": {"name": "inference-gateway", "namespace": "gateways"},
        "pathTemplate": "/ml/{.metadata.namespace}/{.metadata.labels['project']}",
    }
}


def spec_service(routing: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"model": {"name": "qwen-qwen3-32b"}}
    if routing is not None:
        spec["routing"] = routing
    return {
        "apiVersion": "aim.eai.amd.com/v1alpha2",
        "kind": "AIMService",
        "metadata": {"name": "qwen-chat", "namespace": "ml-team", "labels": {"project": "conversational-ai"}},
        "spec": spec,
    }


def upstream_service(**extra_metadata: Any) -> dict[str, Any]:
    """Upstream's test service: name demo, namespace Testing, uid 12345678-90ab, label team=platform."""
    metadata: dict[str, Any] = {
        "name": "demo",
        "namespace": "Testing",
        "uid": "12345678-90ab",
        "labels": {"team": "platform"},
    }
    for key, value in extra_metadata.items():
        metadata.setdefault(key, {}).update(value)
    return {"metadata": metadata, "spec": {}, "status": {"resolvedModel": {"name": "Meta/Llama-3-8B"}}}


def test_spec_example_inherits_the_config_template() -> None:
    assert service_path(spec_service(), SPEC_CONFIG) == "/ml/ml-team/conversational-ai"


def test_spec_example_service_template_overrides_the_config() -> None:
    svc = spec_service({"pathTemplate": "/custom/{.metadata.name}"})
    assert path_template(svc, SPEC_CONFIG) == "/custom/{.metadata.name}"
    assert service_path(svc, SPEC_CONFIG) == "/custom/qwen-chat"


def test_default_template_is_namespace_and_uid() -> None:
    assert DEFAULT_PATH_TEMPLATE == "/{.metadata.namespace}/{.metadata.uid}"
    assert path_template(upstream_service(), {}) == DEFAULT_PATH_TEMPLATE
    assert path_template(upstream_service(), {"routing": {"pathTemplate": ""}}) == DEFAULT_PATH_TEMPLATE
    assert service_path(upstream_service(), {}) == "/testing/12345678-90ab"


@pytest.mark.parametrize(
    ("template", "service", "expected"),
    [
        # upstream ServiceOverride (trailing slash removed)
        (
            "/{.metadata.namespace}/{.metadata.labels['aim.silogen.ai/workload-id']}/",
            upstream_service(labels={"aim.silogen.ai/workload-id": "Workload-42"}),
            "/testing/workload-42",
        ),
        # upstream RuntimeConfigFallback: a `/` inside a value starts a segment (upstream turned it into `-`)
        ("/{.metadata.namespace}/{.status.resolvedModel.name}", upstream_service(), "/testing/meta/llama-3-8b"),
        # upstream Annotation
        (
            "/{.metadata.annotations['route.suffix']}",
            upstream_service(annotations={"route.suffix": "Team-A/B"}),
            "/team-a/b",
        ),
        ('/{.metadata.labels["team"]}', upstream_service(), "/platform"),
        ("/{.metadata.labels.team}", upstream_service(), "/platform"),
        ("/{$.metadata.name}", upstream_service(), "/demo"),
        # literal text is lowercased and encoded too (upstream: "V1.0" -> "v1-0")
        ("/V1.0/x_y/{.metadata.name}", upstream_service(), "/v1.0/x_y/demo"),
        # collapsing and trailing slashes
        ("//a///b//", upstream_service(), "/a/b"),
        ("a/b", upstream_service(), "/a/b"),
        # an empty value makes its segment vanish
        ("/x/{.metadata.labels['empty']}/y", upstream_service(labels={"empty": ""}), "/x/y"),
        # numbers and booleans as JSON writes them
        ("/{.spec.replicas}/{.spec.flag}", {"spec": {"replicas": 3, "flag": True}}, "/3/true"),
    ],
)
def test_render(template: str, service: dict[str, Any], expected: str) -> None:
    assert render_path(template, service) == expected


@pytest.mark.parametrize(
    ("segment", "encoded"),
    [
        ("AZaz09-._~", "azaz09-._~"),
        ("a b", "a%20b"),
        ("é", "%C3%A9"),
        ("É", "%C3%A9"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("🙂", "%F0%9F%99%82"),
        ("?#[]@!$&'()*+,;=:%", "%3F%23%5B%5D%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%3A%25"),
    ],
)
def test_segment_encoding_rfc3986(segment: str, encoded: str) -> None:
    assert encode_segment(segment) == encoded


def test_encoded_values_in_a_path() -> None:
    svc = {"metadata": {"name": "Café Bar?", "namespace": "ns"}}
    assert render_path("/{.metadata.namespace}/{.metadata.name}", svc) == "/ns/caf%C3%A9%20bar%3F"


def test_length_exactly_200_is_accepted_and_201_is_not() -> None:
    assert len(render_path("/" + "a" * 199, {})) == 200
    with pytest.raises(PathTemplateError, match="exceeds 200 characters"):
        render_path("/" + "a" * 200, {})


def test_length_counts_the_encoded_path() -> None:
    # 33 "é" encode to 198 characters: 199 with the slash; one more "é" is 205.
    assert len(render_path("/" + "é" * 33, {})) == 199
    with pytest.raises(PathTemplateError, match="exceeds 200 characters"):
        render_path("/" + "é" * 34, {})


def test_upstream_path_too_long() -> None:
    labels = {f"l{i}": "x" * 104 for i in range(4)}
    template = "/" + "/".join(f"{{.metadata.labels['l{i}']}}" for i in range(4))
    with pytest.raises(PathTemplateError, match="exceeds 200 characters"):
        render_path(template, {"metadata": {"labels": labels}})


@pytest.mark.parametrize(
    ("template", "service", "detail"),
    [
        ("/{.metadata.labels['missing']}", upstream_service(), 'label "missing" not found'),
        ("/{.metadata.annotations['gone']}", upstream_service(), 'annotation "gone" not found'),
        ("/{.spec.nothing}", upstream_service(), 'field "{.spec.nothing}" not found'),
        ("/{.metadata[}", upstream_service(), 'invalid jsonpath expression "{.metadata[}": unterminated array'),
        ("/{}", upstream_service(), 'jsonpath expression "{}" is empty'),
        (
            "/{.metadata.labels[*]}",
            upstream_service(labels={"other": "x"}),
            'jsonpath returned multiple results for "{.metadata.labels[*]}"',
        ),
        ("/{.metadata}", upstream_service(), 'jsonpath returned an object or a list for "{.metadata}"'),
        ("/{.spec.x}", {"spec": {"x": None}}, 'jsonpath returned null for "{.spec.x}"'),
        ("/{.metadata.name", upstream_service(), 'unmatched "{" at offset 1'),
        ("/{.a{.b}}", upstream_service(), 'unmatched "{" at offset 1'),
        ("/a}", upstream_service(), 'unmatched "}" at offset 2'),
        ("///", upstream_service(), "route template produced an empty path"),
        (
            "/{.metadata.labels['empty']}",
            upstream_service(labels={"empty": ""}),
            "route template produced an empty path",
        ),
        ("/a/../b", upstream_service(), 'route path "/a/../b" has a "." or ".." segment'),
        ("/./b", upstream_service(), 'has a "." or ".." segment'),
    ],
)
def test_render_failures(template: str, service: dict[str, Any], detail: str) -> None:
    with pytest.raises(PathTemplateError) as caught:
        render_path(template, service)
    assert caught.value.reason == PATH_TEMPLATE_INVALID
    assert detail in caught.value.detail
    assert str(caught.value).startswith("path template ")


def test_validate_checks_syntax_only() -> None:
    assert validate_path_template("/{.metadata.labels['missing']}") is None
    assert validate_path_template("/plain") is None
    assert validate_path_template("/{.metadata[}") == 'invalid jsonpath expression "{.metadata[}": unterminated array'
    assert validate_path_template("/{.x") == 'unmatched "{" at offset 1'
