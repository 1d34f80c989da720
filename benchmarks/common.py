"""Helpers every benchmark script shares: machine info, results JSON, targets, tables, README sections, `dev up`.

Each function keeps the exact output format the scripts had before they shared it (same JSON keys in the same
order, same table layout, same README markers), so results files and README sections stay comparable across runs.
"""

from __future__ import annotations

import base64
import contextlib
import datetime
import os
import platform
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import orjson
import psutil
import yaml

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "benchmarks" / "README.md"
RESULTS_DIR = ROOT / "benchmarks" / "results"

Targets = dict[str, tuple[str, float]]
TableRow = tuple[str, str, str, str]  # (label, value, target, verdict)
TABLE_HEADER: TableRow = ("figure", "value", "target", "result")


# --- results -----------------------------------------------------------------------------------------------------


def machine_info(load_before: float | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The machine a run measured on; `extra` keys go before the orjson version, the load average last.

    `load_before` is the 1-minute load average taken just before the run (now, when None): other work on a
    shared machine skews the figures, and the load shows it.
    """
    load = os.getloadavg()[0] if load_before is None else load_before
    return {
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        **(extra or {}),
        "orjson": orjson.__version__,
        "load_average_1m_before": round(load, 2),
    }


def run_header(benchmark: str, quick: bool, started_monotonic: float) -> dict[str, Any]:
    """The first keys of every results file: benchmark, mode, timestamp (UTC, now), duration since `started` and
    the commit measured (with `+changes` when the checkout differs from it; absent outside a git checkout)."""
    header: dict[str, Any] = {
        "benchmark": benchmark,
        "mode": "quick" if quick else "full",
        "timestamp": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "duration_s": round(time.monotonic() - started_monotonic, 1),
    }
    commit = checkout_commit()
    if commit:
        header["commit"] = commit
    return header


def checkout_commit(root: Path = ROOT) -> str | None:
    """The commit `root` has checked out, short, with `+changes` when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
        )
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+changes" if dirty.stdout.strip() else "")


def units_of(figures: dict[str, tuple[str, str]]) -> dict[str, str]:
    """The `units` entry of a results file: figure name -> unit, from a `FIGURES` table of (unit, label)."""
    return {name: unit for name, (unit, _) in figures.items()}


def evaluate_targets(figures: dict[str, float], quick: bool, targets: Targets) -> dict[str, dict[str, Any]]:
    """Each target's value and pass/fail (`op` is ">=", "<=" or "=="); a quick run's verdicts carry a note saying
    so."""
    result: dict[str, dict[str, Any]] = {}
    for name, (op, target) in targets.items():
        value = figures[name]
        if op == ">=":
            passed = value >= target
        elif op == "<=":
            passed = value <= target
        elif op == "==":
            passed = value == target
        else:
            raise ValueError(f"target {name}: unknown op {op!r}")
        result[name] = {"target": target, "op": op, "value": value, "pass": passed}
        if quick:
            result[name]["note"] = "quick run: small counts, not a measurement of the target"
    return result


def write_results(path: Path, results: dict[str, Any]) -> None:
    """Write the results as indented JSON (creating the folder) and print where they went."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2) + b"\n")
    print(f"\nresults: {path}", flush=True)


# --- tables and the README ---------------------------------------------------------------------------------------


def text_table(rows: Sequence[Sequence[str]], header: Sequence[str] = TABLE_HEADER) -> str:
    """The terminal table: left-aligned columns under a header and a rule of dashes."""
    all_rows = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(r[i]) for r in all_rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in all_rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def figure_rows(
    results: dict[str, Any],
    figures: dict[str, tuple[str, str]],
    value_text: Callable[[str, float, str], str] | None = None,
) -> list[tuple[str, str, str, str]]:
    """One table row per figure of a `FIGURES` table (name -> (unit, label)): the label, the value and its unit
    (`value_text(name, value, unit)`, else three decimals), the target as `op target` and PASS or FAIL; the last two
    are blank for a figure without a target."""
    rows = []
    for name, (unit, label) in figures.items():
        value = results["figures"][name]
        shown = value_text(name, value, unit) if value_text is not None else f"{value:.3f} {unit}"
        target = results["targets"].get(name)
        wanted = f"{target['op']} {target['target']}" if target else ""
        verdict = ("PASS" if target["pass"] else "FAIL") if target else ""
        rows.append((label, shown, wanted, verdict))
    return rows


def measured_on(results: dict[str, Any]) -> str:
    """The README's last line: when (and in which mode, for how long) the figures were measured, on what machine
    and under what load."""
    machine = results["machine"]
    return (
        f"Measured {results['timestamp']} ({results['mode']} run, {results['duration_s']} s) on "
        f"{machine['cpu_count']} CPUs, {machine['implementation']} {machine['python']}; 1-minute load average "
        f"before the run: {machine['load_average_1m_before']}."
    )


def markdown_rows(rows: Iterable[Sequence[str]], header: Sequence[str] = TABLE_HEADER) -> list[str]:
    """The README table's lines: header, alignment row (the value columns between the label and the last two
    columns right-aligned), one line per row."""
    alignment = ["---", *["---:"] * (len(header) - 3), "---", "---"]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join(alignment) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
    ]


def publish(
    out: Path,
    results: dict[str, Any],
    rows: Sequence[Sequence[str]],
    section: str | None,
    readme: Path,
    markers: tuple[str, str],
) -> None:
    """A run's end: print its table, write its results file and, with a `section` (a full run), rewrite that
    section of `readme` between `markers`."""
    print(text_table(rows), flush=True)
    write_results(out, results)
    if section is not None:
        rewrite_readme_section(readme, section, *markers, append_missing=True)
        print(f"section rewritten in {readme}", flush=True)


def rewrite_readme_section(path: Path, section: str, begin_marker: str, end_marker: str, append_missing: bool) -> bool:
    """Replace only the text between the markers (the file is read just before writing).

    Without the markers (or the file): with `append_missing`, append them and the section (a missing file starts
    as `# Benchmarks`) and return True; otherwise leave everything alone and return False.
    """
    if not path.exists() and not append_missing:
        return False
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    begin, end = text.find(begin_marker), text.find(end_marker)
    if begin < 0 or end < begin:
        if not append_missing:
            return False
        path.write_text(text.rstrip("\n") + f"\n\n{begin_marker}\n{section}\n{end_marker}\n")
        return True
    path.write_text(text[: begin + len(begin_marker)] + "\n" + section + "\n" + text[end:])
    return True


# --- progress ----------------------------------------------------------------------------------------------------


def print_phase(phase: str, text: str, notes: Sequence[str], width: int) -> None:
    """One progress line: `[   phase] text  (note; note)`, the phase right-aligned to `width`."""
    print(f"[{phase:>{width}}] {text}  ({'; '.join(notes)})", flush=True)


def cpu_notes(details: dict[str, Any], other_key: str, other_label: str) -> list[str]:
    """The CPU notes of a progress line: the server's cores, then those under `other_key`, named `other_label`."""
    return [
        f"server cpu {details['server_cpu_cores']:.2f} cores",
        f"{other_label} {details[other_key]:.2f}",
    ]


# --- the `dev up` server process ---------------------------------------------------------------------------------


class DevUpProcess:
    """`python -m omectl dev up --clusters N` in a subprocess (its own session, output to a log file).

    Entering starts it and waits until its ready file lists every cluster (`name url` per line, whole once it
    ends with a newline); `urls` maps cluster name to URL. Leaving sends SIGTERM (SIGKILL after 30 s) and prints
    a warning with the log's tail when it exited with an error.
    """

    def __init__(
        self,
        workdir: Path,
        clusters: int,
        name_prefix: str,
        ready_file: Path,
        kubeconfig: Path,
        log_path: Path,
        apply: Path,
        ready_timeout_s: float,
        poll_s: float,
        label: str,
        real: bool = False,
    ) -> None:
        self.workdir = workdir
        self.clusters = clusters
        self.name_prefix = name_prefix
        self.ready_file = ready_file
        self.kubeconfig = kubeconfig
        self.log_path = log_path
        self.apply = apply
        self.ready_timeout_s = ready_timeout_s
        self.poll_s = poll_s
        self.label = label
        self.real = real
        self.urls: dict[str, str] = {}
        self.exit_code: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._ps: psutil.Process | None = None

    def command(self) -> list[str]:
        """The command line: this interpreter running `omectl dev up` with the CRDs or manifest applied."""
        return [
            sys.executable,
            "-m",
            "omectl",
            "dev",
            "up",
            "--clusters",
            str(self.clusters),
            "--name-prefix",
            self.name_prefix,
            "--ready-file",
            str(self.ready_file),
            "--kubeconfig-out",
            str(self.kubeconfig),
            "--apply",
            str(self.apply),
            *(["--real", "--state-dir", str(self.workdir / f"{self.name_prefix}state")] if self.real else []),
        ]

    def __enter__(self) -> Self:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                self.command(),
                cwd=self.workdir,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            self.urls = self._wait_ready(self.ready_timeout_s)
        except BaseException:
            self._stop()
            raise
        self._ps = psutil.Process(self._proc.pid)
        return self

    def _wait_ready(self, timeout: float) -> dict[str, str]:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while True:
            if self._proc.poll() is not None:
                raise RuntimeError(f"dev up exited with {self._proc.returncode}:\n{self.log_tail()}")
            if self.ready_file.exists():
                text = self.ready_file.read_text()
                lines = [line.split() for line in text.splitlines() if line.strip()]
                # Written in one go, but check it is whole.
                if text.endswith("\n") and len(lines) == self.clusters and all(len(f) >= 2 for f in lines):
                    return {fields[0]: fields[1] for fields in lines}
            if time.monotonic() > deadline:
                raise RuntimeError(f"dev up was not ready after {timeout:.0f} s:\n{self.log_tail()}")
            time.sleep(self.poll_s)

    def log_tail(self, lines: int = 30) -> str:
        """The last `lines` lines of the process's output ("" when the log cannot be read)."""
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def _processes(self) -> list[psutil.Process]:
        """The `dev up` process and, with `real`, the etcd and kube-apiserver processes it started."""
        assert self._ps is not None
        return [self._ps, *self._ps.children(recursive=True)]

    def cpu_seconds(self) -> float:
        """User + system CPU seconds the server (with `real`: also etcd and kube-apiserver) has used so far."""
        total = 0.0
        for process in self._processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                total += times.user + times.system
        return total

    def rss(self) -> int:
        """The server's resident set size (with `real`: summed over `dev up`, etcd and kube-apiserver), in bytes."""
        total = 0
        for process in self._processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                total += process.memory_info().rss
        return total

    def credentials(self) -> tuple[str, str]:
        """The bearer token and CA certificate (PEM) of the first cluster, from the kubeconfig it wrote."""
        return next(iter(kubeconfig_credentials(self.kubeconfig).values()))

    def _stop(self) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self.exit_code = None if self._proc is None else self._proc.returncode
            return
        self._proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self._proc.wait(30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self.exit_code = self._proc.wait(10)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop()
        if self.exit_code not in (0, None):
            print(f"warning: {self.label} exited with {self.exit_code}:\n{self.log_tail()}", flush=True)


def kubeconfig_credentials(path: Path) -> dict[str, tuple[str, str]]:
    """Server URL -> (bearer token, CA certificate PEM) of every context of a kubeconfig `dev up` wrote."""
    config = yaml.safe_load(path.read_text())
    clusters = {c["name"]: c["cluster"] for c in config.get("clusters") or []}
    users = {u["name"]: u.get("user") or {} for u in config.get("users") or []}
    found: dict[str, tuple[str, str]] = {}
    for context in config.get("contexts") or []:
        cluster = clusters[context["context"]["cluster"]]
        user = users.get(context["context"].get("user", ""), {})
        ca_data = cluster.get("certificate-authority-data")
        ca = base64.b64decode(ca_data).decode() if ca_data else ""
        found[cluster["server"]] = (user.get("token", ""), ca)
    return found


class ServerAuth:
    """Per-server request options (bearer header, TLS context) for one aiohttp session talking to many servers."""

    def __init__(self, credentials: dict[str, tuple[str, str]]) -> None:
        self._options: dict[str, dict[str, Any]] = {}
        for url, (token, ca) in credentials.items():
            options: dict[str, Any] = {"headers": {"Authorization": f"Bearer {token}"} if token else {}}
            if ca:
                options["ssl"] = ssl.create_default_context(cadata=ca)
            self._options[url.rstrip("/")] = options

    def options(self, url: str, content_type: str | None = None) -> dict[str, Any]:
        """The keyword arguments of `session.request` for a request to `url` (a full URL of one of the servers)."""
        for base, options in self._options.items():
            if url.startswith(base):
                headers = dict(options["headers"])
                if content_type:
                    headers["Content-Type"] = content_type
                return {**options, "headers": headers}
        return {"headers": {"Content-Type": content_type} if content_type else {}}


# --- the real kube-apiserver column ------------------------------------------------------------------------------

REAL_TABLE_HEADER = ("figure", "embedded", "real kube-apiserver", "embedded / real", "target", "result")


def add_real_option(parser: Any) -> None:
    """`--real auto|yes|no`: the same phases against a real kube-apiserver + etcd beside the embedded server."""
    parser.add_argument(
        "--real",
        choices=("auto", "yes", "no"),
        default="auto",
        help="the same phases against a real kube-apiserver + etcd (`make envtest`): auto (when built, default), "
        "yes (an error without them), no",
    )


def real_server_for(choice: str) -> tuple[str | None, str | None]:
    """(the real server's "kube-apiserver vX with etcd vY" or None, an error to exit with or None) for `--real`."""
    if choice == "no":
        return None, None
    from omectl.envtest import BinariesMissing, find_binaries

    try:
        binaries = find_binaries()
    except BinariesMissing:
        if choice == "yes":
            return None, "error: --real yes needs the real kube-apiserver and etcd: run `make envtest`"
        print("the real kube-apiserver and etcd are not built (`make envtest`): no real-server column", flush=True)
        return None, None
    return f"kube-apiserver {binaries.kube_version} with etcd {binaries.etcd_version}", None
