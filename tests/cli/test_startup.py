"""A command that only prints help or reads a file starts without importing the world (issue 19 §5).

Each case runs the CLI in a fresh interpreter and reads back which modules it imported: none of the heavy ones
(the HTTP client and kubernetes_asyncio, OpenTelemetry, the API models, the embedded server) may be among them.
The CPU cost itself is a benchmark figure (`benchmarks/cli_startup.py`), not asserted here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from omectl.cli.main import Commands, RuntimeCommands

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("kubernetes_asyncio", "aiohttp", "opentelemetry", "omectl.api", "omectl.kube.client", "omectl.embedded")
PROBE = """
import json, sys
from omectl.cli.main import app
try:
    app(sys.argv[1:], prog_name="omectl")
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""


def imported_by(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    (tmp_path / "clusters").mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMECTL_CLUSTERS_DIR=str(tmp_path / "clusters"))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize("args", [("--help",), ("runtime", "--help"), ("cluster", "list"), ("version",)], ids=" ".join)
def test_help_and_local_commands_import_no_heavy_module(tmp_path: Path, args: tuple[str, ...]) -> None:
    code, modules = imported_by(tmp_path, *args)
    assert code in (0, None)
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY or any(m.startswith(h) for h in HEAVY))
    assert loaded == [], f"omectl {' '.join(args)} imported {loaded[:10]}"


def test_a_command_that_talks_to_clusters_does_import_the_client(tmp_path: Path) -> None:
    """The probe itself works: a command that needs the client shows it among the modules."""
    _code, modules = imported_by(tmp_path, "runtime", "effective", "--help")
    assert "omectl.kube.client" in modules


def _first_paragraph(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").split("\n\n")[0]).strip()


@pytest.mark.parametrize(
    ("group", "name"),
    [(Commands, name) for name in Commands.lazy] + [(RuntimeCommands, name) for name in RuntimeCommands.lazy],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_the_help_listed_for_a_lazy_command_is_its_own(group: type, name: str) -> None:
    real = group.lazy[name].load(name)
    assert real.name == name
    assert _first_paragraph(group.lazy[name].help) == _first_paragraph(real.help)
