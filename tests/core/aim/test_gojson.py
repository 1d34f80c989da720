"""JSON as upstream's Go reads and writes a merged AIM_ENGINE_ARGS (core/aim/gojson.py): the expected texts are what
encoding/json's Marshal gives for the value Unmarshal decodes into an `any`."""

from __future__ import annotations

import pytest

from omectl.core.aim import gojson
from omectl.core.aim.engine_args import merge_engine_args


@pytest.mark.parametrize(
    ("text", "go"),
    [
        ('{"b": 1, "a": {"d": true, "c": null}}', '{"a":{"c":null,"d":true},"b":1}'),  # keys sorted, no spaces
        ('{"x":8192.0}', '{"x":8192}'),  # every number is a float64
        ('{"x":0.9}', '{"x":0.9}'),
        ('{"x":2.5e-5}', '{"x":0.000025}'),  # 'f' form from 1e-6 ...
        ('{"x":1e-7}', '{"x":1e-7}'),  # ... 'e' below it, with e-07 shortened to e-7
        ('{"x":1e20}', '{"x":100000000000000000000}'),  # 'f' form below 1e21 ...
        ('{"x":1e21}', '{"x":1e+21}'),  # ... 'e' from it
        ('{"x":1.5e300}', '{"x":1.5e+300}'),
        ('{"x":123456789012345678901}', '{"x":123456789012345680000}'),  # past 2**53 digits are lost
        ('{"x":-0}', '{"x":-0}'),
        ('{"x":[1,"two",[3.25]]}', '{"x":[1,"two",[3.25]]}'),
        ('{"t":"<|im_start|> & é"}', '{"t":"\\u003c|im_start|\\u003e \\u0026 é"}'),  # HTML escaped, UTF-8 kept
        ('{"t":"a\\u2028b\\n\\t\\u0001"}', '{"t":"a\\u2028b\\n\\t\\u0001"}'),
    ],
)
def test_marshal_writes_what_go_writes(text: str, go: str) -> None:
    assert gojson.marshal(gojson.unmarshal(text)) == go


@pytest.mark.parametrize("text", ["NaN", '{"x":Infinity}', '{"x":1e400}', "{", "{'a':1}"])
def test_unmarshal_refuses_what_go_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        gojson.unmarshal(text)


def test_a_merged_engine_args_value_is_written_as_go_writes_it() -> None:
    lower = {"name": "AIM_ENGINE_ARGS", "value": '{"max-model-len": 4096.0, "chat-template": "<s>"}'}
    upper = {"name": "AIM_ENGINE_ARGS", "value": '{"gpu-memory-utilization": 0.9}'}
    assert merge_engine_args(lower, upper)["value"] == (
        '{"chat-template":"\\u003cs\\u003e","gpu-memory-utilization":0.9,"max-model-len":4096}'
    )


def test_a_value_go_cannot_read_is_not_merged_the_upper_stays_verbatim() -> None:
    lower = {"name": "AIM_ENGINE_ARGS", "value": '{"x": 1e400}'}
    upper = {"name": "AIM_ENGINE_ARGS", "value": '{"y": 1}'}
    assert merge_engine_args(lower, upper) == upper
