"""`--dist loadgroup` keeps an xdist group's tests on one worker (tests/conftest.py restores the group in the id)."""

from __future__ import annotations

import pytest


@pytest.mark.xdist_group("xdist-group-check")
def test_a_grouped_test_carries_its_group_in_its_id_under_loadgroup(request: pytest.FixtureRequest) -> None:
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("only under pytest-xdist's --dist loadgroup")
    assert request.node.nodeid.endswith("@xdist-group-check")
