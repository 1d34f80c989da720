"""Each figure of a benchmark as the median of its repeated rounds, with the spread (lowest, highest) beside it."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence

ROUNDS = 3


def median_and_spread(
    rounds: Sequence[Mapping[str, float]], names: Iterable[str], digits: int = 3
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """(figure -> median over the rounds, figure -> [lowest, highest]) for every name in `names`."""
    figures: dict[str, float] = {}
    spread: dict[str, list[float]] = {}
    for name in names:
        values = [r[name] for r in rounds]
        figures[name] = round(statistics.median(values), digits)
        spread[name] = [round(min(values), digits), round(max(values), digits)]
    return figures, spread
