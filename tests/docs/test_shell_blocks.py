"""Every shell block in README.md, docs/ and benchmarks/README.md names commands and options that exist.

Each line of a ```sh block is checked by what it runs: `omectl ...` and `kubectl ...` (also `kubectl ome`, the
plugin, and a `kubectl exec ... -- omectl ...`) run with `--help` appended, which parses the command path and
every option without doing anything; `make T` needs a target T in the Makefile; `python -m benchmarks.X` and
`scripts/X` need each option the line gives in their `--help`. A block that cannot be checked here (Docker is not
available on every machine) is marked with `<!-- illustrative: why -->` on the line above it.

omectl's own lines (and the omectl part of `kubectl ome` and `kubectl exec ... -- omectl`) are parsed in this process
by the command line the console scripts run, with click's test runner: the same parser and exit status without a
Python start per line. That `kubectl ome` reaches the plugin is checked once, by a real `kubectl ome --help`. Each
`--help` a line's options are looked up in runs once per worker: the module is one xdist group.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support import kubectl_path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks" / "README.md"]
BLOCK = re.compile(r"^```(?:sh|bash|shell)\n(.*?)^```", re.S | re.M)
ILLUSTRATIVE = re.compile(r"<!-- illustrative: [^>]+ -->\n$")
VENV_BIN = Path(sys.executable).parent
pytestmark = pytest.mark.xdist_group("shell-blocks")  # one worker: each cached `--help` below runs once


@dataclass(frozen=True)
class ShellLine:
    doc: str
    line_number: int
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.doc}:{self.line_number}: {shlex.join(self.words)}"


def shell_blocks() -> list[tuple[str, int, str, bool]]:
    """(doc, first line number, block text, marked illustrative) for every shell block."""
    blocks = []
    for doc in DOCS:
        text = doc.read_text()
        for match in BLOCK.finditer(text):
            before = text[: match.start()]
            blocks.append(
                (
                    doc.relative_to(ROOT).as_posix(),
                    before.count("\n") + 2,
                    match.group(1),
                    bool(ILLUSTRATIVE.search(before)),
                )
            )
    return blocks


def checked_lines() -> list[ShellLine]:
    lines = []
    for doc, first, text, illustrative in shell_blocks():
        if illustrative:
            continue
        pending, start = "", 0
        for offset, raw in enumerate(text.splitlines()):
            if not pending:
                start = offset
            if raw.endswith("\\"):
                pending += raw[:-1] + " "
                continue
            words = tuple(shlex.split(pending + raw, comments=True))
            pending = ""
            if words:
                lines.append(ShellLine(doc, first + start, words))
    return lines


LINES = checked_lines()


def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}", KUBECONFIG=os.devnull)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=False)


def options(words: tuple[str, ...]) -> list[str]:
    """The long options a line gives (`[--server URL]` as an optional one counts too)."""
    return [w.strip("[]").partition("=")[0] for w in words if w.strip("[").startswith("--")]


def make_targets() -> set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def check(line: ShellLine) -> str | None:
    """None when the line names what exists, else what is wrong."""
    words = list(line.words)
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # VAR=value command
        words.pop(0)
    if not words:  # a shell variable set for the lines after it
        return None
    command = words[0]
    if command == "export":
        return None if all(re.fullmatch(r"[A-Z_]+=\S+", w) for w in words[1:]) else "not an assignment"
    if command == "make":
        missing = [t for t in words[1:] if t not in make_targets()]
        return f"no make target {missing}" if missing else None
    if command in ("omectl", ".venv/bin/omectl"):
        return omectl_help_problem("omectl", words[1:])
    if command == "kubectl":
        if "--" in words and words[words.index("--") + 1] == "omectl":  # kubectl exec ... -- omectl ...
            return omectl_help_problem("omectl", words[words.index("--") + 2 :]) or help_problem(
                [kubectl_path(), *words[1 : words.index("--")]]
            )
        if words[1:2] == ["ome"]:  # kubectl runs the plugin kubectl-ome with the words after `ome`
            return kubectl_plugin_problem() or omectl_help_problem("kubectl-ome", words[2:])
        return help_problem([kubectl_path(), *words[1:]])
    if command in (".venv/bin/python", "python") and words[1:3] and words[1] == "-m":
        return options_problem([sys.executable, "-m", words[2], "--help"], words[3:])
    if command.startswith("scripts/"):
        return options_problem([str(ROOT / command), "--help"], words[1:])
    return f"{command}: no check for this command here; mark its block <!-- illustrative: why -->"


def help_problem(argv: list[str]) -> str | None:
    done = run([*argv, "--help"])
    if done.returncode != 0:
        return f"exit {done.returncode}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return None


def omectl_help_problem(prog_name: str, args: list[str]) -> str | None:
    """`omectl ARGS --help` (or `kubectl-ome ARGS --help`) as the console script runs it, in this process."""
    from omectl.cli.main import app

    done = CliRunner().invoke(app, [*args, "--help"], prog_name=prog_name, env={"KUBECONFIG": os.devnull})
    if done.exit_code != 0:
        return f"exit {done.exit_code}: {(done.stderr or done.stdout).strip().splitlines()[-1:]}"
    return None


@cache
def kubectl_plugin_problem() -> str | None:
    """kubectl finds the plugin on PATH and runs it (`kubectl ome`: the venv's kubectl-ome)."""
    return help_problem([kubectl_path(), "ome"])


@cache
def help_text(help_argv: tuple[str, ...]) -> subprocess.CompletedProcess[str]:
    """A program's `--help` does not change while the tests run: asked once per program."""
    return run(list(help_argv))


def options_problem(help_argv: list[str], words: list[str]) -> str | None:
    done = help_text(tuple(help_argv))
    if done.returncode != 0:
        return f"--help exits {done.returncode}: {done.stderr.strip()[-200:]}"
    missing = [o for o in options(tuple(words)) if o not in done.stdout]
    return f"options not in its --help: {missing}" if missing else None


def test_the_docs_have_shell_blocks_to_check() -> None:
    assert len(LINES) > 40
    assert {line.doc for line in LINES} >= {"README.md", "docs/operations.md", "benchmarks/README.md"}


@pytest.mark.kubectl
@pytest.mark.parametrize("line", LINES, ids=str)
def test_every_shell_line_names_commands_and_options_that_exist(line: ShellLine) -> None:
    problem = check(line)
    assert problem is None, f"{line}: {problem}"


def test_the_check_catches_a_command_or_option_that_does_not_exist() -> None:
    kubectl_path()
    wrong = [
        ("omectl", "cluster", "lisst"),
        ("omectl", "runtime", "tree", "x", "--all-clustrs"),
        ("kubectl", "ome", "runtime", "histroy", "x"),
        ("kubectl", "get", "pods", "--bogus-flag"),
        ("make", "no-such-target"),
        (".venv/bin/python", "-m", "benchmarks.resolver", "--quik"),
        ("scripts/register-cluster.sh", "--hub-contxt", "hub"),
        ("docker", "build", "."),
    ]
    for words in wrong:
        assert check(ShellLine("test", 0, words)) is not None, words
