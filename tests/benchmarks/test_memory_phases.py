"""benchmarks.memory_phases: what the latency rounds add after the profile edits, in all, per round and by type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.memory_phases import CHILD, DumpingOmectl, summary


def dump(phase: str, rss_mib: float, live_mib: float, types: dict[str, int]) -> dict[str, Any]:
    return {
        "phase": phase,
        "rss": int(rss_mib * 2**20),
        "rss_after_trim": int((rss_mib - 1) * 2**20),
        "pymalloc": {"live_bytes": int(live_mib * 2**20)},
        "malloc": {"in_use_bytes": 2**20},
        "gc_objects": sum(types.values()),
        "gc_types": types,
    }


def test_the_rounds_growth_is_counted_from_the_profile_edits_not_from_the_cold_start() -> None:
    dumps = [
        dump("cold start", 100, 50, {"dict": 1000, "list": 10}),
        dump("3 profile edits", 120, 60, {"dict": 1100, "list": 10, "Revision": 5}),
        dump("latency round 1", 130, 65, {"dict": 1400, "list": 40, "Revision": 5}),
        dump("latency round 2", 140, 70, {"dict": 1700, "list": 70, "Revision": 3, "MergeResult": 1}),
    ]
    result = summary(dumps, 2)
    added = result["latency_rounds_added"]
    assert (added["rss_mb"], added["rss_mb_per_round"], added["pymalloc_live_mb_per_round"]) == (20.0, 10.0, 5.0)
    assert added["gc_objects_per_round"] == 330  # (1,774 - 1,115) / 2, rounded
    assert list(added["gc_objects_by_type"].items())[:3] == [("dict", 600), ("list", 60), ("MergeResult", 1)]
    assert added["gc_objects_by_type"]["Revision"] == -2
    assert [r["phase"] for r in result["phases"]] == [d["phase"] for d in dumps]
    assert result["phases"][0] == {
        "phase": "cold start",
        "rss_mb": 100.0,
        "rss_after_trim_mb": 99.0,
        "pymalloc_live_mb": 50.0,
        "malloc_in_use_mb": 1.0,
        "gc_objects": 1010,
    }


def test_the_controller_runs_as_omectl_run_under_the_dumping_child(tmp_path: Path) -> None:
    omectl = DumpingOmectl(tmp_path, "after", tmp_path)
    assert omectl.command[1:4] == [str(CHILD), str(tmp_path / "after.dumps"), "run"]
    assert omectl.command[4:6] == ["--clusters-dir", str(tmp_path / "clusters")]
    assert (tmp_path / "after.dumps").is_dir()
