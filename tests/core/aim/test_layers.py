"""The layer merge field by field: overrides incl. false/0, unset values, nested objects, env by name, replaced
lists, deprecated-field migration, and provenance."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from omectl.core.aim.layers import (
    OPERATOR_DEFAULTS_LAYER,
    is_unset,
    layer_name,
    merge_config,
    merge_layers,
    migrate_deprecated_fields,
)

CLUSTER = layer_name("AIMClusterRuntimeConfig", "", "default")
NAMESPACE = layer_name("AIMRuntimeConfig", "ml-team", "default")
INLINE = layer_name("AIMService", "ml-team", "qwen-chat", "spec.runtimeConfig")


def test_layer_names() -> None:
    assert CLUSTER == "AIMClusterRuntimeConfig default"
    assert NAMESPACE == "AIMRuntimeConfig ml-team/default"
    assert INLINE == "AIMService ml-team/qwen-chat spec.runtimeConfig"


@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [
        # scalars: a present upper value wins, false and 0 included
        ({"routing": {"enabled": True}}, {"routing": {"enabled": False}}, {"routing": {"enabled": False}}),
        ({"routing": {"enabled": False}}, {"routing": {"enabled": True}}, {"routing": {"enabled": True}}),
        (
            {"storage": {"pvcHeadroomPercent": 20}},
            {"storage": {"pvcHeadroomPercent": 0}},
            {"storage": {"pvcHeadroomPercent": 0}},
        ),
        (
            {"labelPropagation": {"enabled": True}},
            {"labelPropagation": {"enabled": False}},
            {"labelPropagation": {"enabled": False}},
        ),
        (
            {"routing": {"pathTemplate": "/a"}},
            {"routing": {"pathTemplate": "/b"}},
            {"routing": {"pathTemplate": "/b"}},
        ),
        # unset upper values never delete
        ({"routing": {"pathTemplate": "/a"}}, {"routing": {"pathTemplate": None}}, {"routing": {"pathTemplate": "/a"}}),
        ({"routing": {"pathTemplate": "/a"}}, {"routing": {"pathTemplate": ""}}, {"routing": {"pathTemplate": "/a"}}),
        ({"routing": {"pathTemplate": "/a"}}, {"routing": None}, {"routing": {"pathTemplate": "/a"}}),
        ({"routing": {"pathTemplate": "/a"}}, {"routing": {}}, {"routing": {"pathTemplate": "/a"}}),
        (
            {"labelPropagation": {"match": ["a"]}},
            {"labelPropagation": {"match": []}},
            {"labelPropagation": {"match": ["a"]}},
        ),
        ({"env": [{"name": "A", "value": "1"}]}, {"env": []}, {"env": [{"name": "A", "value": "1"}]}),
        (
            {"routing": {"annotations": {"a": "1"}}},
            {"routing": {"annotations": {}}},
            {"routing": {"annotations": {"a": "1"}}},
        ),
        (
            {"routing": {"pathTemplate": "/a"}},
            {"routing": {"gatewayRef": {"name": ""}}},
            {"routing": {"pathTemplate": "/a"}},
        ),
        # nested objects merge per field
        (
            {"routing": {"gatewayRef": {"name": "gw-a", "namespace": "gateways"}}},
            {"routing": {"gatewayRef": {"name": "gw-b"}}},
            {"routing": {"gatewayRef": {"name": "gw-b", "namespace": "gateways"}}},
        ),
        (
            {"routing": {"enabled": True, "requestTimeout": "60s"}},
            {"routing": {"requestTimeout": "30s"}},
            {"routing": {"enabled": True, "requestTimeout": "30s"}},
        ),
        (
            {"storage": {"defaultStorageClassName": "fast-nvme", "pvcHeadroomPercent": 10}},
            {"storage": {"defaultStorageClassName": "team-ssd"}},
            {"storage": {"defaultStorageClassName": "team-ssd", "pvcHeadroomPercent": 10}},
        ),
        # maps merge by key, the upper layer winning a shared key
        (
            {"routing": {"annotations": {"a": "1", "b": "2"}}},
            {"routing": {"annotations": {"b": "3", "c": "4"}}},
            {"routing": {"annotations": {"a": "1", "b": "3", "c": "4"}}},
        ),
        # other lists are replaced whole
        (
            {"labelPropagation": {"enabled": True, "match": ["a", "b"]}},
            {"labelPropagation": {"match": ["c"]}},
            {"labelPropagation": {"enabled": True, "match": ["c"]}},
        ),
        # unset values of the lowest layer are dropped too
        ({"routing": {"pathTemplate": "", "enabled": None}, "env": []}, {}, {}),
    ],
)
def test_field_by_field(lower: dict[str, Any], upper: dict[str, Any], expected: dict[str, Any]) -> None:
    assert merge_config(lower, upper) == expected


@pytest.mark.parametrize(
    ("lower", "upper", "expected"),
    [
        # lower order kept, override in place, new names appended in the upper layer's order
        (
            [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}, {"name": "C", "value": "3"}],
            [{"name": "D", "value": "4"}, {"name": "B", "value": "20"}, {"name": "E", "value": "5"}],
            [
                {"name": "A", "value": "1"},
                {"name": "B", "value": "20"},
                {"name": "C", "value": "3"},
                {"name": "D", "value": "4"},
                {"name": "E", "value": "5"},
            ],
        ),
        # an entry is replaced whole: valueFrom never mixes with the lower value
        (
            [{"name": "HF_TOKEN", "value": "plain"}],
            [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
            [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
        ),
        # nameless entries are dropped; a name repeated in one layer is taken once, last entry at first position
        (
            [{"name": "A", "value": "1"}],
            [{"value": "x"}, {"name": "B", "value": "1"}, {"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
            [{"name": "A", "value": "2"}, {"name": "B", "value": "3"}],
        ),
    ],
)
def test_env_merges_by_name(lower: list[Any], upper: list[Any], expected: list[Any]) -> None:
    assert merge_config({"env": lower}, {"env": upper}) == {"env": expected}


def test_env_of_only_nameless_entries_is_unset() -> None:
    assert merge_config({"env": [{"name": "A", "value": "1"}]}, {"env": [{"value": "x"}]}) == {
        "env": [{"name": "A", "value": "1"}]
    }
    assert merge_config({}, {"env": [{"value": "x"}]}) == {}


def test_an_object_holding_only_an_env_of_nameless_entries_is_unset() -> None:
    merged = merge_layers(
        [(CLUSTER, {"labelPropagation": "x"}), (NAMESPACE, {"labelPropagation": {"env": [{"value": "1"}, "y"]}})]
    )
    assert merged.config == {"labelPropagation": "x"}
    assert merged.provenance == {"labelPropagation": CLUSTER}
    assert merge_config({}, {"routing": {"env": [{"value": "1"}]}}) == {}


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"defaultStorageClassName": "fast-nvme"}, {"storage": {"defaultStorageClassName": "fast-nvme"}}),
        ({"pvcHeadroomPercent": 0}, {"storage": {"pvcHeadroomPercent": 0}}),
        (
            {"defaultStorageClassName": "old", "storage": {"defaultStorageClassName": "new"}},
            {"storage": {"defaultStorageClassName": "new"}},
        ),
        (
            {"pvcHeadroomPercent": 5, "storage": {"pvcHeadroomPercent": 15}},
            {"storage": {"pvcHeadroomPercent": 15}},
        ),
        (
            {"defaultStorageClassName": "old", "storage": {"defaultStorageClassName": ""}},
            {"storage": {"defaultStorageClassName": "old"}},
        ),
        ({"defaultStorageClassName": "", "pvcHeadroomPercent": None}, {}),
    ],
)
def test_deprecated_fields_migrate(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    assert migrate_deprecated_fields(spec) == expected


def test_spec_storage_example_migrates_per_layer() -> None:
    # The spec's storage defaults: cluster fast-nvme, namespace override team-ssd, both on the deprecated field.
    merged = merge_layers(
        [(CLUSTER, {"defaultStorageClassName": "fast-nvme"}), (NAMESPACE, {"defaultStorageClassName": "team-ssd"})]
    )
    assert merged.config == {"storage": {"defaultStorageClassName": "team-ssd"}}
    assert merged.provenance == {"storage.defaultStorageClassName": NAMESPACE}


def test_upper_deprecated_field_beats_lower_storage_field() -> None:
    merged = merge_layers(
        [
            (CLUSTER, {"storage": {"defaultStorageClassName": "fast-nvme"}}),
            (NAMESPACE, {"defaultStorageClassName": "team-ssd"}),
        ]
    )
    assert merged.config == {"storage": {"defaultStorageClassName": "team-ssd"}}


def test_provenance_names_the_layer_of_each_leaf() -> None:
    merged = merge_layers(
        [
            (OPERATOR_DEFAULTS_LAYER, {"storage": {"pvcHeadroomPercent": 10}}),
            (
                CLUSTER,
                {
                    "routing": {
                        "enabled": True,
                        "gatewayRef": {"name": "gw", "namespace": "gateways"},
                        "annotations": {"example.com/a": "1"},
                    },
                    "env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP,XET"}],
                    "labelPropagation": {"enabled": True, "match": ["team-*"]},
                },
            ),
            (
                NAMESPACE,
                {
                    "routing": {"pathTemplate": "/x/{.metadata.name}", "gatewayRef": {"name": "gw-b"}},
                    "env": [{"name": "AIM_DOWNLOADER_PROTOCOL", "value": "HTTP"}, {"name": "HF_HOME", "value": "/h"}],
                },
            ),
            (INLINE, {"labelPropagation": {"match": ["cost-*"]}, "storage": {"pvcHeadroomPercent": 0}}),
        ]
    )
    assert merged.provenance == {
        "storage.pvcHeadroomPercent": INLINE,
        "routing.enabled": CLUSTER,
        "routing.gatewayRef.name": NAMESPACE,
        "routing.gatewayRef.namespace": CLUSTER,
        'routing.annotations["example.com/a"]': CLUSTER,
        "env[name=AIM_DOWNLOADER_PROTOCOL].name": NAMESPACE,
        "env[name=AIM_DOWNLOADER_PROTOCOL].value": NAMESPACE,
        "labelPropagation.enabled": CLUSTER,
        "labelPropagation.match": INLINE,
        "routing.pathTemplate": NAMESPACE,
        "env[name=HF_HOME].name": NAMESPACE,
        "env[name=HF_HOME].value": NAMESPACE,
    }
    assert merged.layers == (OPERATOR_DEFAULTS_LAYER, CLUSTER, NAMESPACE, INLINE)


def test_an_env_entry_replaced_whole_drops_the_lower_leaves() -> None:
    merged = merge_layers(
        [
            (CLUSTER, {"env": [{"name": "T", "value": "v"}]}),
            (NAMESPACE, {"env": [{"name": "T", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]}),
        ]
    )
    assert merged.provenance == {
        "env[name=T].name": NAMESPACE,
        "env[name=T].valueFrom.secretKeyRef.name": NAMESPACE,
        "env[name=T].valueFrom.secretKeyRef.key": NAMESPACE,
    }


def test_a_leaf_an_upper_layer_sets_again_moves_to_the_end_of_the_provenance() -> None:
    merged = merge_layers(
        [
            (CLUSTER, {"routing": {"enabled": True, "pathTemplate": "/a"}, "env": [{"name": "A", "value": "1"}]}),
            (NAMESPACE, {"routing": {"enabled": False}, "env": [{"name": "A", "value": "2"}]}),
        ]
    )
    assert list(merged.provenance.items()) == [
        ("routing.pathTemplate", CLUSTER),
        ("routing.enabled", NAMESPACE),
        ("env[name=A].name", NAMESPACE),
        ("env[name=A].value", NAMESPACE),
    ]


def test_a_scalar_over_an_object_drops_the_object_leaves() -> None:
    merged = merge_layers(
        [(CLUSTER, {"routing": {"gatewayRef": {"name": "gw"}}}), (NAMESPACE, {"routing": {"gatewayRef": "oops"}})]
    )
    assert merged.config == {"routing": {"gatewayRef": "oops"}}
    assert merged.provenance == {"routing.gatewayRef": NAMESPACE}


def test_inputs_are_never_modified_nor_shared() -> None:
    lower = {
        "routing": {"annotations": {"a": "1"}},
        "env": [{"name": "A", "value": "1"}],
        "labelPropagation": {"match": ["x"]},
    }
    upper = {
        "routing": {"annotations": {"b": "2"}},
        "env": [{"name": "B", "value": "2"}],
        "defaultStorageClassName": "s",
    }
    before = copy.deepcopy((lower, upper))
    merged = merge_config(lower, upper)
    assert (lower, upper) == before
    merged["routing"]["annotations"]["c"] = "3"
    merged["env"][0]["value"] = "changed"
    merged["labelPropagation"]["match"].append("y")
    assert (lower, upper) == before


def test_a_layer_name_given_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="given twice"):
        merge_layers([(CLUSTER, {}), (CLUSTER, {})])


def test_no_layers_is_an_empty_config() -> None:
    merged = merge_layers([])
    assert (merged.config, merged.provenance, merged.layers) == ({}, {}, ())


@pytest.mark.parametrize(
    ("value", "unset"),
    [
        (None, True),
        ("", True),
        ([], True),
        ({}, True),
        ({"a": None, "b": {"c": ""}}, True),
        (False, False),
        (0, False),
        ("x", False),
        ([None], False),
    ],
)
def test_is_unset(value: Any, unset: bool) -> None:
    assert is_unset(value) is unset
