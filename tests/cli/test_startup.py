"""A command that only prints help or reads a file starts without importing the world (issue 19 §5).

Each case runs the CLI in a fresh interpreter and reads back which modules it imported: none of the heavy ones
(the HTTP client and kubernetes_asyncio, OpenTelemetry, the API models, the embedded server, pydantic and typer's
pydantic-based parameter adapters) may be among them. The CPU cost itself is a benchmark figure
(`benchmarks/cli_startup.py`), not asserted here. Parameters convert without pydantic (`omectl.cli.light_params`):
the last tests check that conversion, and that it is in force only with the typer it was written for.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from omectl.cli import light_params
from omectl.cli.main import Commands, RuntimeCommands, app
from omectl.cli.rollout import RolloutCommands
from omectl.sim.kubeconfig import KubeconfigEntry, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
HEAVY = (
    "kubernetes_asyncio",
    "aiohttp",
    "opentelemetry",
    "omectl.api",
    "omectl.kube.client",
    "omectl.sim",
    "pydantic",
    "pydantic_core",
    "typer._adapters",
)
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
    (tmp_path / "clusters").mkdir(exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMECTL_CLUSTERS_DIR=str(tmp_path / "clusters"))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60
    )
    report = json.loads(proc.stderr.strip().splitlines()[-1])
    return report["code"], set(report["modules"])


@pytest.mark.parametrize(
    "args",
    [
        ("--help",),
        ("runtime", "--help"),
        ("rollout", "--help"),
        ("rollout", "status", "--help"),
        ("cluster", "list"),
        ("version",),
    ],
    ids=" ".join,
)
def test_help_and_local_commands_import_no_heavy_module(tmp_path: Path, args: tuple[str, ...]) -> None:
    code, modules = imported_by(tmp_path, *args)
    assert code in (0, None)
    loaded = sorted(m for m in modules if m.split(".")[0] in HEAVY or any(m.startswith(h) for h in HEAVY))
    assert loaded == [], f"omectl {' '.join(args)} imported {loaded[:10]}"


def test_cluster_list_reads_a_registration_without_pydantic(tmp_path: Path) -> None:
    """With a cluster registered, `cluster list` reads its registration and kubeconfig: still no heavy module."""
    kubeconfig = tmp_path / "kc.yaml"
    write_kubeconfig(kubeconfig, [KubeconfigEntry("c1", "https://127.0.0.1:6443", token="t")], current="c1")
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "c1.yaml").write_text(
        "apiVersion: omectl.io/v1alpha1\nkind: ClusterRegistration\nmetadata:\n  name: c1\n"
        f"spec:\n  kubeconfig:\n    path: {kubeconfig}\n"
    )
    code, modules = imported_by(tmp_path, "cluster", "list", "-o", "json")
    assert code in (0, None)
    assert "omectl.fleet.registration" in modules  # the registration was read
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], f"omectl cluster list imported {loaded[:10]}"


def test_rollout_status_without_a_hub_reads_the_fleet_runtime_files_without_pydantic(tmp_path: Path) -> None:
    """Without a hub, `rollout status` reads a FleetRuntime file and the state beside it: no heavy module either."""
    (tmp_path / "clusters").mkdir()
    (tmp_path / "clusters" / "fr.yaml").write_text(
        "apiVersion: fleet.omectl.io/v1alpha1\nkind: FleetRuntime\nmetadata:\n  name: fr\nspec:\n  template: {}\n"
    )
    code, modules = imported_by(tmp_path, "rollout", "status", "fr", "-o", "json")
    assert code in (0, None)
    assert "omectl.fleet.runtime_files" in modules  # the file was read
    loaded = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
    assert loaded == [], f"omectl rollout status imported {loaded[:10]}"


def test_a_command_that_talks_to_clusters_does_import_the_client(tmp_path: Path) -> None:
    """The probe itself works: a command that needs the client shows it among the modules."""
    _code, modules = imported_by(tmp_path, "runtime", "effective", "--help")
    assert "omectl.kube.client" in modules


def _first_paragraph(text: str | None) -> str:
    return re.sub(r"\s+", " ", (text or "").split("\n\n")[0]).strip()


@pytest.mark.parametrize(
    ("group", "name"),
    [(Commands, name) for name in Commands.lazy]
    + [(RuntimeCommands, name) for name in RuntimeCommands.lazy]
    + [(RolloutCommands, name) for name in RolloutCommands.lazy],
    ids=lambda value: value if isinstance(value, str) else value.__name__,
)
def test_the_help_listed_for_a_lazy_command_is_its_own(group: type, name: str) -> None:
    real = group.lazy[name].load(name)
    assert real.name == name
    assert _first_paragraph(group.lazy[name].help) == _first_paragraph(real.help)


# --- parameter conversion without pydantic --------------------------------------------------------------------


def test_light_conversion_is_in_force_only_with_the_pinned_typer() -> None:
    """Importing the CLI installs it; it is written against one typer, the one pyproject.toml pins."""
    import typer.core

    assert typer.__version__ == light_params.TYPER_VERSION
    assert typer.core.build_runtime_param is light_params.build_runtime_param  # type: ignore[attr-defined]
    pins = (ROOT / "pyproject.toml").read_text() + (ROOT / "constraints.txt").read_text()
    assert pins.count(f"typer=={light_params.TYPER_VERSION}") == 2


def test_every_parameter_of_every_command_converts_without_pydantic() -> None:
    from tests.cli.test_bad_input import leaf_commands

    typer_converted = [
        f"{' '.join(path)} {param.name}: {param.type_descriptor.annotation}"
        for path, command in leaf_commands()
        for param in command.params
        if light_params.converter(param.type_descriptor.annotation, param.type_descriptor.parameter_info) is None
    ]
    assert typer_converted == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("trace", "list", "--limit", "0"), "Invalid value for '--limit': 0 is not in the range x>=1."),
        (("trace", "list", "--limit", "ten"), "Invalid value for '--limit': 'ten' is not a valid integer."),
        (("dev", "up", "--clusters", "65"), "Invalid value for '--clusters': 65 is not in the range 1<=x<=64."),
        (("cluster", "check", "--timeout", "soon"), "Invalid value for '--timeout': 'soon' is not a valid float."),
        (
            ("trace", "list", "-o", "xml"),
            "Invalid value for '-o' / '--output': 'xml' is not one of 'table', 'wide', 'name', 'json', 'yaml'.",
        ),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, tuple) else None,
)
def test_a_bad_value_is_one_line_in_clicks_words(args: tuple[str, ...], message: str) -> None:
    result = CliRunner().invoke(app, list(args), prog_name="omectl")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"error: {message} (see 'omectl {' '.join(args[:2])} --help')"]


def _convert(annotation: object, value: object, **info: object) -> object:
    parameter_info = typer.models.OptionInfo(**info)  # type: ignore[arg-type]
    convert = light_params.converter(annotation, parameter_info)
    assert convert is not None
    return convert(value, None, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("annotation", "value", "info", "expected"),
    [
        (int, " 4 ", {}, 4),
        (int, "3.0", {}, 3),
        (int, 7, {"min": 1}, 7),
        (int, "99", {"max": 10, "clamp": True}, 10),
        (float, "1e3", {}, 1000.0),
        (float, 2, {}, 2.0),
        (bool, "Yes", {}, True),
        (bool, "off", {}, False),
        (str, b"caf\xc3\xa9", {}, "café"),
        (Path, "a/b", {}, Path("a/b")),
        (list[str], "one", {}, ["one"]),
        (list[Path], ("a", "b"), {}, [Path("a"), Path("b")]),
        (tuple[str, int], ("k", "2"), {}, ("k", 2)),
    ],
    ids=repr,
)
def test_plain_types_convert_as_typer_converts_them(
    annotation: object, value: object, info: dict[str, object], expected: object
) -> None:
    converted = _convert(annotation, value, **info)
    assert converted == expected
    assert type(converted) is type(expected)


def test_a_parser_or_a_datetime_is_left_to_typer() -> None:
    from datetime import datetime

    assert light_params.converter(datetime, typer.models.OptionInfo()) is None
    assert light_params.converter(int, typer.models.OptionInfo(parser=int)) is None
