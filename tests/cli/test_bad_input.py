"""Bad input gets one clear line, never a traceback (issue 19 §3).

Every command (walked from the CLI's command tables, so a new command is covered the day it is added) runs in a
subprocess with bad input: an option that does not exist, and each of its path options given a file or directory
it cannot use. Each must exit 1 (2 for a usage error), print exactly one `error:` line on stderr and no traceback,
and leave its directory as it was. Then the cases the issue lists, message by message; Ctrl-C; the scrubber.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, get_args

import typer
from typer import _click as click
from typer.core import TyperGroup
from typer.testing import CliRunner

from omectl.cli.lazy import LazyGroup
from omectl.cli.main import app
from omectl.observability.redact import scrub

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 60  # a command still running after this did not reject its input: it serves, or waits
WORKERS = max(2, min(4, os.cpu_count() or 2))

# What every case's directory holds; an argument "@NAME" is that entry's absolute path.
PASSWD = "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
BAD_FILES = {
    "passwd": PASSWD,  # YAML that parses to a string
    "broken.yaml": "a: [\n",
    "list.yaml": "- 1\n- 2\n",
    "binary": bytes(range(256)),
    "file": "a plain file\n",
    "unknown.yaml": "nope: 1\nconcurrency: 0\n",
    "rejected.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: BAD_NAME\n",
}

# How a path option is used: by its name, or for this command where the name alone does not say.
INPUT_FILE, INPUT_DIR, OUTPUT_FILE, OUTPUT_DIR = "input file", "input directory", "output file", "output directory"
ROLE_BY_OPTION = {
    "--clusters-dir": INPUT_DIR,
    "--kubeconfig-out": OUTPUT_FILE,
    "--ready-file": OUTPUT_FILE,
    "--trace-file": OUTPUT_FILE,
    "--register": OUTPUT_DIR,
    "--state-dir": OUTPUT_DIR,
}
ROLES = {
    ("run", "--status-file"): OUTPUT_FILE,
    ("run", "--fleet-state-dir"): OUTPUT_DIR,
    ("cluster add", "--clusters-dir"): OUTPUT_DIR,
}
# Each path option gets the next of its role's bad values in turn, so every value is tried and the battery is fast.
BAD_VALUES = {
    INPUT_FILE: ("@passwd", "@broken.yaml", "@dir", "@binary", "@list.yaml", "@missing.yaml"),
    INPUT_DIR: ("@missing-dir", "@file"),
    OUTPUT_FILE: ("@dir", "@file/x"),
    OUTPUT_DIR: ("@file",),
}
BASE_ARGS = {("dev", "up"): ("--clusters", "1")}  # one embedded cluster starts faster than three
BOX = re.compile("[╭╰│─]")


@dataclass(frozen=True)
class Case:
    args: tuple[str, ...]
    codes: tuple[int, ...] = (1, 2)
    line: str | None = None  # a regular expression the stderr line must contain


@dataclass(frozen=True)
class Outcome:
    case: Case
    code: int | None
    stdout: str
    stderr: str
    changed: tuple[str, ...]

    def problems(self) -> list[str]:
        found = []
        if "Traceback" in self.stdout + self.stderr:
            found.append("a traceback")
        if self.code not in self.case.codes:
            found.append(f"exit status {self.code}, not {' or '.join(map(str, self.case.codes))}")
        lines = self.stderr.strip().splitlines()
        if len(lines) != 1:
            found.append(f"{len(lines)} lines on stderr")
        elif not lines[0].startswith("error: "):
            found.append("stderr does not start with 'error: '")
        elif self.case.line is not None and not re.search(self.case.line, lines[0]):
            found.append(f"the error does not match {self.case.line!r}")
        if BOX.search(self.stderr):
            found.append("a rich box on stderr")
        if self.changed:
            found.append(f"changed {', '.join(self.changed)}")
        return found

    def report(self) -> str:
        return f"omectl {' '.join(self.case.args)}: {'; '.join(self.problems())}\n    stderr: {self.stderr[-600:]!r}"


def make_directory(directory: Path) -> Path:
    directory.mkdir(parents=True)
    for name, content in BAD_FILES.items():
        path = directory / name
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content)
    (directory / "dir").mkdir()
    return directory


def snapshot(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(directory)): (p.stat().st_size, p.stat().st_mtime_ns) for p in directory.rglob("*")}


def environment(home: Path) -> dict[str, str]:
    """No kubeconfig, clusters directory or trace file from the machine running the tests."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMECTL_", "OTEL_", "KUBECONFIG"))}
    return dict(env, PYTHONPATH=str(ROOT), HOME=str(home))


def resolve(args: tuple[str, ...], directory: Path) -> list[str]:
    return [str(directory / arg[1:]) if arg.startswith("@") else arg for arg in args]


def run_case(case: Case, directory: Path) -> Outcome:
    make_directory(directory)
    before = snapshot(directory)
    command = [sys.executable, "-m", "omectl", *resolve(case.args, directory)]
    try:
        proc = subprocess.run(
            command, capture_output=True, text=True, cwd=directory, env=environment(directory), timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else exc.stderr or ""
        return Outcome(case, None, "", f"still running after {TIMEOUT} s\n{stderr}", ())
    after = snapshot(directory)
    changed = tuple(sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name)))
    return Outcome(case, proc.returncode, proc.stdout, proc.stderr, changed)


def run_all(cases: list[Case], tmp_path: Path) -> list[Outcome]:
    with ThreadPoolExecutor(WORKERS) as pool:
        return list(pool.map(run_case, cases, [tmp_path / f"case-{i}" for i in range(len(cases))]))


# --- the battery -------------------------------------------------------------------------------------------


def leaf_commands() -> list[tuple[tuple[str, ...], click.Command]]:
    """Every command the CLI runs, by its path (`("cluster", "add")`), loaded from the lazy tables."""
    found: list[tuple[tuple[str, ...], click.Command]] = []

    def walk(group: TyperGroup, path: tuple[str, ...]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            if isinstance(group, LazyGroup) and name in group.lazy:
                command = group.load(name)
            else:
                command = group.get_command(ctx, name)
            assert command is not None
            if isinstance(command, TyperGroup):
                walk(command, (*path, name))
            else:
                found.append(((*path, name), command))

    walk(typer.main.get_command(app), ())  # type: ignore[arg-type]
    return found


def is_path(param: Any) -> bool:
    pending = [param.type_descriptor.annotation]
    while pending:
        annotation = pending.pop()
        if annotation is Path:
            return True
        pending.extend(get_args(annotation))
    return False


def required_args(command: click.Command, but: str | None = None) -> list[str]:
    """Values for the required arguments and options (bad ones for paths), but not for option `but`."""
    args: list[str] = []
    for param in command.params:
        if not param.required or but in param.opts:
            continue
        value = "@passwd" if is_path(param) else "x"
        args += [value] if param.param_type_name == "argument" else [max(param.opts, key=len), value]
    return args


def battery() -> list[Case]:
    cases = []
    turns: Counter[str] = Counter()
    for path, command in leaf_commands():
        base = (*path, *BASE_ARGS.get(path, ()))
        path_options = [p for p in command.params if p.param_type_name == "option" and is_path(p)]
        if not path_options:  # a usage error then (every command's: test_every_command_reports_an_unknown_option)
            cases.append(Case((*base, "--no-such-option"), codes=(2,), line="No such option: --no-such-option"))
        for param in path_options:
            option = max(param.opts, key=len)
            role = ROLES.get((" ".join(path), option)) or ROLE_BY_OPTION.get(option, INPUT_FILE)
            value = BAD_VALUES[role][turns[role] % len(BAD_VALUES[role])]
            turns[role] += 1
            cases.append(Case((*base, *required_args(command, but=option), option, value)))
    return cases


def test_the_battery_runs_every_command_and_tries_every_bad_value() -> None:
    commands = [path for path, _ in leaf_commands()]
    assert {("run",), ("dev", "up"), ("cluster", "list"), ("runtime", "effective"), ("completion",)} <= set(commands)
    cases = battery()
    assert all(any(c.args[: len(path)] == path for c in cases) for path in commands)
    tried = {c.args[-1] for c in cases}
    assert all(value in tried for values in BAD_VALUES.values() for value in values)


def test_every_command_reports_an_unknown_option_in_one_line() -> None:
    """In this process (click's parsing is the same for all, and a subprocess each would cost seconds)."""
    runner = CliRunner()
    for path, _ in leaf_commands():
        result = runner.invoke(app, [*path, "--no-such-option"], prog_name="omectl")
        assert result.exit_code == 2, result.output
        assert result.stderr.splitlines() == [
            f"error: No such option: --no-such-option (see 'omectl {' '.join(path)} --help')"
        ], result.stderr


def test_every_command_rejects_bad_input_in_one_line(tmp_path: Path) -> None:
    failures = [o.report() for o in run_all(battery(), tmp_path) if o.problems()]
    assert not failures, "\n".join(failures)


# --- the cases of the issue ------------------------------------------------------------------------------

NOT_A_KUBECONFIG = r"/passwd: not a kubeconfig"
ISSUE_CASES = [
    Case(("run", "--config", "@broken.yaml"), (1,), r"config file \S+/broken\.yaml: not valid YAML: .+ \(line 2, "),
    Case(("run", "--config", "@list.yaml"), (1,), r"/list\.yaml: must hold a mapping of settings, not a list$"),
    Case(
        ("run", "--config", "@unknown.yaml"),
        (1,),
        r"/unknown\.yaml: concurrency: must be at least 1 \(got 0\); nope: unknown setting$",
    ),
    Case(("run", "--concurrency", "0", "--log-level", "LOUD"), (1,), r"^error: concurrency: must be at least 1"),
    Case(("run", "--clusters-dir", "@missing-dir"), (1,), r"clusters directory \S+/missing-dir does not exist$"),
    Case(("version", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("doctor", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("cluster", "add", "c1", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("cluster", "uninstall-webhooks", "--kubeconfig", "@passwd"), (1,), r"^error: \S+" + NOT_A_KUBECONFIG),
    Case(("runtime", "effective", "x", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("runtime", "tree", "x", "--kubeconfig", "@broken.yaml"), (1,), r"broken\.yaml: not a kubeconfig"),
    Case(("cluster", "check", "--kubeconfig", "@passwd"), (2,), r"No such option: --kubeconfig"),
    # kubernetes_asyncio's "Config not found" warning is not printed before the error
    Case(("runtime", "history", "x", "--kubeconfig", "@missing"), (1,), r"^error: kubeconfig not found: \S+/missing$"),
    Case(
        ("dev", "up", "--clusters", "1", "--kubeconfig-out", "/proc/nope/kc"),
        (1, 2),
        r"--kubeconfig-out.* /proc/nope/kc",
    ),
    Case(("dev", "up", "--clusters", "1", "--kubeconfig-out", "@file/kc"), (2,), r"file/kc cannot be created"),
    Case(
        ("dev", "up", "--clusters", "1", "--apply", "@rejected.yaml"),
        (1,),
        r"/rejected\.yaml: cluster sim-1 rejects ConfigMap BAD_NAME: .*Invalid value: \"BAD_NAME\"",
    ),
    Case(("dev", "up", "--clusters", "1", "--apply", "@passwd"), (1,), r"/passwd: document 1 is not a Kubernetes"),
    Case(("dev", "up", "--clusters", "2", "--nodes", "sim-9=1x8"), (2,), r"there is no cluster 'sim-9'"),
    Case(("dev", "up", "--clusters", "1", "--name-prefix", "BAD_"), (2,), r'invalid cluster name "BAD_1"'),
    Case(("cluster", "list", "--clusters-dir", "@missing-dir"), (1,), r"clusters directory \S+/missing-dir does"),
    Case(("fleet", "status", "--clusters-dir", "@file"), (1,), r"clusters directory \S+/file is not a directory$"),
    Case(("cluster", "status", "--status-file", "@passwd"), (1,), r"/passwd: not a controller status file$"),
    Case(("trace", "list", "--file", "@binary"), (1,), r"/binary: not a trace file"),
]


# kubectl's habits (issue 19 §4): -o, -l, -A and --watch take bad values as one usage line too
OPTION_CASES = [
    Case(("cluster", "list", "-o", "xml"), (2,), r"'xml' is not one of 'table', 'wide', 'name', 'json', 'yaml'"),
    Case(("cluster", "list", "-l", "gpu in ("), (2,), r"'-l' / '--selector': invalid label selector 'gpu in \('"),
    Case(("cluster", "check", "-l", "a=b,"), (2,), r"invalid label selector 'a=b,': '' is not a label key"),
    Case(("cluster", "status", "-l", "!"), (2,), r"invalid label selector '!': '' is not a label key"),
    Case(("fleet", "status", "-l", "gpu notin ()"), (2,), r"'notin' needs at least one value"),
    Case(("fleet", "status", "--watch", "--interval", "0"), (2,), r"'--interval': 0.0 is not in the range x>=0.1"),
    Case(("trace", "list", "--watch", "--interval", "x"), (2,), r"'--interval': 'x' is not a valid float"),
    Case(("trace", "list", "-o", "name"), (2,), r"name: each row is a reconcile, not an object"),
    Case(("trace", "explain", "ServingRuntime", "x", "-o", "name"), (2,), r"each row is a field, not an object"),
    Case(("doctor", "-o", "name"), (2,), r"name: each row is a check's finding, not an object"),
    Case(("version", "-o", "name"), (2,), r"name: each row is a server, not an object"),
    Case(("runtime", "effective", "x", "-A"), (2,), r"named within one namespace: drop NAME or -A"),
    Case(("runtime", "effective", "-A", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("runtime", "history", "x", "-o", "wide", "--kubeconfig", "@passwd"), (1,), NOT_A_KUBECONFIG),
    Case(("runtime", "plan", "-f", "@file", "-o", "wide"), (2,), r"'wide' is not one of 'table', 'json', 'yaml'"),
]


def test_each_bad_value_of_the_kubectl_style_options_is_one_line(tmp_path: Path) -> None:
    failures = [o.report() for o in run_all(OPTION_CASES, tmp_path) if o.problems()]
    assert not failures, "\n".join(failures)


def test_each_case_of_the_issue_is_one_line_naming_the_input(tmp_path: Path) -> None:
    outcomes = run_all(ISSUE_CASES, tmp_path)
    failures = [o.report() for o in outcomes if o.problems()]
    assert not failures, "\n".join(failures)
    for outcome in outcomes:  # pydantic's words never reach the operator
        assert not re.search(r"Input should|Extra inputs|Value error|pydantic", outcome.stderr), outcome.stderr
        assert "<redacted>" not in outcome.stderr
    # long lines stay whole: no wrapping at 80 columns when stderr is not a terminal
    assert max(len(o.stderr) for o in outcomes) > 200


def test_scrub_keeps_ordinary_messages_and_still_masks_credentials() -> None:
    assert scrub("/etc/passwd: not a kubeconfig (expected a mapping)") == (
        "/etc/passwd: not a kubeconfig (expected a mapping)"
    )
    assert (
        scrub("cannot read /var/run/secrets/token: no such file") == "cannot read /var/run/secrets/token: no such file"
    )
    assert scrub("password: hunter2, token=abc123") == "password: <redacted>, token=<redacted>"


# --- Ctrl-C, and a live fleet ------------------------------------------------------------------------------

HOG = """\
apiVersion: apps/v1
kind: Deployment
metadata: {name: hog, namespace: default, labels: {ome.io/inferenceservice: hog}}
spec:
  replicas: 1
  selector: {matchLabels: {app: hog}}
  template:
    metadata: {labels: {app: hog}}
    spec:
      containers: [{name: engine, image: engine, resources: {limits: {nvidia.com/gpu: 4}}}]
"""


@contextmanager
def started(directory: Path, *args: str) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "omectl", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=directory,
        env=environment(directory),
    )
    watchdog = threading.Timer(TIMEOUT, proc.kill)  # a blocked readline below ends when the process does
    watchdog.start()
    try:
        yield proc
    finally:
        watchdog.cancel()
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def read_until(stream: IO[str] | None, text: str) -> str:
    assert stream is not None
    seen = []
    for line in stream:
        seen.append(line)
        if text in line:
            return "".join(seen)
    raise AssertionError(f"the output ended before {text!r}:\n{''.join(seen)[-2000:]}")


def interrupt(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out + err


def test_ctrl_c_stops_dev_up_and_run_with_130_and_fleet_status_counts_no_negative_gpus(tmp_path: Path) -> None:
    directory = make_directory(tmp_path / "live")
    (directory / "hog.yaml").write_text(HOG)
    fleet_args = ("--simulate", "--nodes", "1x1", "--apply", "hog.yaml", "--register", "clusters")
    with started(directory, "dev", "up", "--clusters", "1", *fleet_args) as fleet:
        read_until(fleet.stdout, "serving; press Ctrl-C to stop")
        status = subprocess.run(
            [sys.executable, "-m", "omectl", "fleet", "status", "--clusters-dir", "clusters"],
            capture_output=True,
            text=True,
            cwd=directory,
            env=environment(directory),
            timeout=TIMEOUT,
        )
        assert status.returncode == 0, status.stderr
        row = status.stdout.splitlines()[1]
        assert "4/1" in row and "over by 3" in row, status.stdout
        assert not re.search(r"(?<![\w/-])-\d", status.stdout), status.stdout  # no negative count

        run_args = ("--clusters-dir", "clusters", "--webhook-port", "0", "--metrics-port", "-1")
        with started(directory, "run", *run_args, "--no-install-webhooks", "--status-file", "st.json") as controller:
            read_until(controller.stderr, "omectl: clusters from clusters")
            code, output = interrupt(controller)
            assert (code, "Traceback" in output) == (130, False), output
        code, output = interrupt(fleet)
        assert (code, "Traceback" in output) == (130, False), output
        assert output.rstrip().endswith("stopped")


def test_ctrl_c_while_waiting_for_a_cluster_exits_130_without_a_traceback(tmp_path: Path) -> None:
    directory = make_directory(tmp_path / "waiting")
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        silent.settimeout(TIMEOUT)
        (directory / "kubeconfig").write_text(
            "apiVersion: v1\nkind: Config\ncurrent-context: silent\n"
            f"clusters: [{{name: silent, cluster: {{server: 'http://127.0.0.1:{silent.getsockname()[1]}'}}}}]\n"
            "users: [{name: silent, user: {}}]\n"
            "contexts: [{name: silent, context: {cluster: silent, user: silent}}]\n"
        )
        with started(directory, "version", "--kubeconfig", "kubeconfig", "--timeout", str(TIMEOUT)) as proc:
            connection, _ = silent.accept()  # the command now waits for the server's answer
            with connection:
                code, output = interrupt(proc)
    assert (code, output) == (130, "")
