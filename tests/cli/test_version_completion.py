"""`omectl version` (the client, and with --kubeconfig each server's version and the omectl CRDs it serves) and
`omectl completion SHELL`, against two embedded clusters on a background thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from omectl import __version__
from omectl.cli.main import app
from omectl.sim.fleet import BackgroundFleet

CRDS = Path(__file__).resolve().parents[2] / "deploy" / "crds"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def test_version_prints_the_client_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"Client Version: {__version__}"
    as_json = runner.invoke(app, ["version", "-o", "json"])
    assert json.loads(as_json.output) == {"clientVersion": __version__}
    wide = runner.invoke(app, ["version", "-o", "wide"])
    assert (wide.exit_code, wide.output) == (0, result.output)


def test_version_refuses_output_name_as_a_usage_error(runner: CliRunner) -> None:
    result = runner.invoke(app, ["version", "-o", "name"], prog_name="omectl")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '-o' / '--output': name: each row is a server, not an object "
        "(see 'omectl version --help')\n"
    )


def test_version_with_a_kubeconfig_reports_each_server_and_its_omectl_crds(
    runner: CliRunner, bg_fleet: BackgroundFleet, tmp_path: Path
) -> None:
    bg_fleet.run(bg_fleet.fleet.apply([CRDS]))
    kubeconfig = bg_fleet.fleet.write_kubeconfig(tmp_path / "fleet.kubeconfig")
    result = runner.invoke(app, ["version", "--kubeconfig", str(kubeconfig), "-o", "json"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["clientVersion"] == __version__
    assert [s["context"] for s in document["servers"]] == ["bg-1", "bg-2"]
    for server in document["servers"]:
        assert server["serverVersion"].startswith("v1.")
        assert server["crds"]["servingruntimes.ome.io"] == ["v1beta1"]
        assert "v1alpha1" in server["crds"]["aimruntimeconfigs.aim.eai.amd.com"]
        assert all(name.endswith(("ome.io", "aim.eai.amd.com")) for name in server["crds"])
    table = runner.invoke(app, ["version", "--kubeconfig", str(kubeconfig), "--context", "bg-2"])
    assert table.exit_code == 0, table.output
    lines = table.output.splitlines()
    assert lines[0] == f"Client Version: {__version__}"
    assert lines[1].split() == ["CONTEXT", "SERVER", "VERSION", "CRDS"]
    assert lines[2].split()[0] == "bg-2" and "servingruntimes.ome.io=v1beta1" in lines[2]


def test_version_names_a_server_it_cannot_reach_and_exits_one(runner: CliRunner, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "dead.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: dead\n"
        "clusters: [{name: dead, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: dead, user: {token: t}}]\n"
        "contexts: [{name: dead, context: {cluster: dead, user: dead}}]\n"
    )
    result = runner.invoke(app, ["version", "--kubeconfig", str(kubeconfig), "--timeout", "2"])
    assert result.exit_code == 1
    assert "dead" in result.output and "error:" in result.output
    missing = runner.invoke(app, ["version", "--kubeconfig", str(tmp_path / "missing"), "--context", "x"])
    assert missing.exit_code == 1


def test_completion_prints_a_script_for_each_shell_and_refuses_others(runner: CliRunner) -> None:
    for shell, marker in (
        ("bash", "complete -o default -F"),
        ("zsh", "compdef"),
        ("fish", "complete --command omectl --no-files"),
    ):
        result = runner.invoke(app, ["completion", shell], prog_name="omectl")
        assert result.exit_code == 0, result.output
        assert "_OMECTL_COMPLETE" in result.output and marker in result.output, shell
    unknown = runner.invoke(app, ["completion", "tcsh"], prog_name="omectl")
    assert unknown.exit_code == 2
    assert 'unknown shell "tcsh"' in unknown.output


@pytest.mark.parametrize(
    ("words", "cword", "expected"), [("omectl clu", "1", "cluster"), ("omectl runtime pl", "2", "plan")]
)
def test_the_shell_protocol_completes_commands_of_lazy_groups(words: str, cword: str, expected: str) -> None:
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, _OMECTL_COMPLETE="complete_bash", COMP_WORDS=words, COMP_CWORD=cword, PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, "-m", "omectl"], capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [expected]
