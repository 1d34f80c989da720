"""The scale of a Kubernetes quantity's suffix: decimal SI (`n` to `E`), binary (`Ki` to `Ei`) and exponents."""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Final

SUFFIX_SCALE: Final[Mapping[str, Fraction]] = {
    "": Fraction(1),
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(1 << 10),
    "Mi": Fraction(1 << 20),
    "Gi": Fraction(1 << 30),
    "Ti": Fraction(1 << 40),
    "Pi": Fraction(1 << 50),
    "Ei": Fraction(1 << 60),
}


def scaled(base: Fraction, suffix: str) -> Fraction:
    """`base` times what `suffix` (a key of SUFFIX_SCALE, or an exponent such as `e9`) stands for."""
    if suffix[:1] in ("e", "E"):
        return base * Fraction(10) ** int(suffix[1:])
    return base * SUFFIX_SCALE[suffix]
