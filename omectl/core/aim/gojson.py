"""JSON read and written as upstream's Go does it with encoding/json into and out of `map[string]any`.

What differs from Python's json: every number is a float64 (an integer past 2**53 loses digits, 8192.0 is written
8192); a number is written in Go's shortest form, with an exponent only below 1e-6 or from 1e21 on (`1e-7`,
`1e+21`); keys are sorted; `<`, `>`, `&`, U+2028 and U+2029 in strings are escaped as `\\u003c`..., other non-ASCII
characters are written as they are; NaN and Infinity are not JSON.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def unmarshal(text: str) -> Any:
    """The value Go decodes from `text` into an `any`; ValueError when Go would refuse it."""
    return json.loads(text, parse_int=float, parse_float=_float, parse_constant=_refuse)


def marshal(value: Any) -> str:
    """`value` (what `unmarshal` returns) as Go's json.Marshal writes it."""
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ",".join(f"{_string(key)}:{marshal(item)}" for key, item in items) + "}"
    if isinstance(value, list):
        return "[" + ",".join(marshal(item) for item in value) + "]"
    if isinstance(value, str):
        return _string(value)
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return _number(float(value))
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} does not fit a float64")
    return value


def _refuse(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _string(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    for char, escape in _HTML_ESCAPES.items():
        out = out.replace(char, escape)
    return out


def _number(value: float) -> str:
    """strconv.FormatFloat(value, 'f' or 'e', -1, 64) as encoding/json picks it, with its `e-07` -> `e-7`."""
    if not math.isfinite(value):
        raise ValueError(f"{value} is not JSON")
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits))
    point = len(text) + exponent  # the decimal point sits after this many digits
    minus = "-" if sign else ""
    if abs(value) < 1e-6 or abs(value) >= 1e21:
        mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
        power = point - 1
        return f"{minus}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}".replace("e-0", "e-")
    if point <= 0:
        return f"{minus}0.{'0' * -point}{text}"
    if point >= len(text):
        return f"{minus}{text}{'0' * (point - len(text))}"
    return f"{minus}{text[:point]}.{text[point:]}"
