"""Condition stamping: lastTransitionTime kept while the status stays, `now` when it changes."""

from __future__ import annotations

from omectl.core.conditions import by_type, stamp_all, stamped, transition_time

EARLIER = "2026-01-01T00:00:00Z"
NOW = "2026-02-01T00:00:00Z"


def _ready(status: str, **extra: str) -> dict[str, str]:
    return {"type": "Ready", "status": status, "reason": "R", "message": "m", **extra}


def test_an_unchanged_status_keeps_its_transition_time() -> None:
    assert transition_time(_ready("True", lastTransitionTime=EARLIER), "True", NOW) == EARLIER


def test_a_changed_status_transitions_now() -> None:
    assert transition_time(_ready("False", lastTransitionTime=EARLIER), "True", NOW) == NOW


def test_no_previous_condition_transitions_now() -> None:
    assert transition_time(None, "True", NOW) == NOW
    assert transition_time({}, "True", NOW) == NOW


def test_a_previous_condition_without_a_time_transitions_now() -> None:
    assert transition_time(_ready("True"), "True", NOW) == NOW
    assert transition_time(_ready("True", lastTransitionTime=""), "True", NOW) == NOW


def test_the_state_can_be_another_field() -> None:
    before = {"name": "east", "phase": "Applied", "lastTransitionTime": EARLIER}
    assert transition_time(before, "Applied", NOW, field="phase") == EARLIER
    assert transition_time(before, "Drifted", NOW, field="phase") == NOW
    assert transition_time(before, "Applied", NOW) == NOW  # no "status" in it: compared on status, it changed


def test_stamped_adds_the_time_and_leaves_the_condition_alone() -> None:
    wanted = _ready("True", reason="Other")
    out = stamped(wanted, _ready("True", lastTransitionTime=EARLIER), NOW)
    assert out == {**wanted, "lastTransitionTime": EARLIER}
    assert "lastTransitionTime" not in wanted


def test_stamped_replaces_a_time_the_wanted_condition_carried() -> None:
    assert stamped(_ready("True", lastTransitionTime="stale"), None, NOW)["lastTransitionTime"] == NOW


def test_by_type_skips_what_is_not_a_mapping_and_keeps_the_later_of_a_type() -> None:
    first, second = _ready("True"), _ready("False")
    found = by_type([first, "junk", None, second, {"type": "Other", "status": "True"}])
    assert found == {"Ready": second, "Other": {"type": "Other", "status": "True"}}
    assert found["Ready"] is second


def test_stamp_all_matches_each_wanted_condition_to_its_type() -> None:
    previous = [
        _ready("True", lastTransitionTime=EARLIER),
        {"type": "Progressing", "status": "True", "lastTransitionTime": EARLIER},
        "junk",
    ]
    wanted = [_ready("True"), {"type": "Progressing", "status": "False"}, {"type": "New", "status": "True"}]
    assert stamp_all(wanted, previous, NOW) == [
        _ready("True", lastTransitionTime=EARLIER),
        {"type": "Progressing", "status": "False", "lastTransitionTime": NOW},
        {"type": "New", "status": "True", "lastTransitionTime": NOW},
    ]
