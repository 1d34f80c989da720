"""`--dist loadgroup` keeps an xdist group's tests on one worker (tests/conftest.py restores the group in the id) and
hands out the tests marked `long` first."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("xdist-group-check")
def test_a_grouped_test_carries_its_group_in_its_id_under_loadgroup(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@xdist-group-check")


def test_long_tests_come_first_under_loadgroup_longest_first(request: pytest.FixtureRequest) -> None:
    """xdist hands the units of one test out in collection order: those marked `long` lead, so none is left to run
    alone at the end (tests/conftest.py)."""
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest-xdist's --dist loadgroup")
    weights = [max((int(m.args[0]) for m in item.iter_markers("long")), default=0) for item in request.session.items]
    assert weights == sorted(weights, reverse=True)
