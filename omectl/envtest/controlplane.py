"""`RealAPIServer`: one cluster's etcd and kube-apiserver as local processes, the way envtest starts them.

What it sets up in its work directory (`<workdir>/<name>/`), and why:

- `pki/`: a CA and a serving certificate for 127.0.0.1/localhost (`--tls-cert-file`; the CA goes into the
  kubeconfig), and an RSA service-account key (`--service-account-key-file`, `--service-account-signing-key-file`).
- `tokens.csv`: a static token file (`--token-auth-file`) with one admin token (user `omectl-admin`, group
  `system:masters`), the token every client of this cluster uses: the kubeconfig's, the controller's.
- `etcd/`: etcd's data, on a free loopback port, no fsync (a test cluster, not a durable one).
- `etcd.log`, `kube-apiserver.log`: each process's output; a process that dies is reported with the tail.

kube-apiserver runs with `--authorization-mode=RBAC`, its default admission plugins (so the Mutating and
Validating admission webhooks are on) less `ServiceAccount` (no controller-manager creates the `default`
service account), `--service-cluster-ip-range=10.0.0.0/16`, and `--cert-dir` for whatever else it writes.
There is no kubelet, scheduler or controller-manager: no Deployment gets a ReplicaSet, nothing collects
ownerReferences, and a namespace deletion never finishes (the workload simulator, run as a client, marks
workloads ready: `omectl.envtest.simulator`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import secrets
import signal
import socket
import ssl
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

import aiohttp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from omectl.background import BackgroundTasks
from omectl.envtest.binaries import EnvtestBinaries, find_binaries
from omectl.sim.kubeconfig import KubeconfigEntry
from omectl.tls import CertificateAuthority, client_ssl_context

__all__ = ["ADMIN_GROUP", "ADMIN_USER", "ControlPlaneError", "RealAPIServer", "free_port"]

ADMIN_USER = "omectl-admin"
ADMIN_GROUP = "system:masters"
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/16"  # 65,534 Service IPs: a /24 runs out at 254 Services
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LOG_TAIL_LINES = 30
_PR_SET_PDEATHSIG = 1


class ControlPlaneError(RuntimeError):
    """A process would not start, died, or never became ready; the message carries the tail of its log."""


def free_port(host: str = "127.0.0.1") -> int:
    """A port the kernel picks from its ephemeral range (closed again: the process binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open("r", errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the child gets SIGTERM when omectl dies, so no etcd or kube-apiserver is left behind."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class _Process:
    """One child process whose output goes to a log file."""

    def __init__(self, name: str, argv: Sequence[str], log: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.log = log
        self.proc: asyncio.subprocess.Process | None = None
        self.stopping = False

    async def start(self) -> None:
        with self.log.open("ab") as out:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,  # Ctrl-C reaches omectl only; it stops the children in order
                preexec_fn=_die_with_parent,
            )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @property
    def exited(self) -> bool:
        return self.proc is not None and self.proc.returncode is not None

    def crash_report(self) -> str:
        code = self.proc.returncode if self.proc is not None else None
        return f"{self.name} exited with status {code}; the last lines of {self.log}:\n{log_tail(self.log)}"

    async def stop(self, grace: float = 10.0) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        self.stopping = True
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()


class RealAPIServer:
    """etcd + kube-apiserver for one cluster; `url`, `ca_pem` and `token` are what a client needs."""

    def __init__(
        self,
        name: str,
        workdir: Path | str,
        *,
        binaries: EnvtestBinaries | None = None,
        extra_args: Sequence[str] = (),
        start_timeout: float = 90.0,
    ) -> None:
        self.name = name
        self.binaries = binaries or find_binaries()
        self.dir = Path(workdir) / name
        self.extra_args = list(extra_args)
        self.start_timeout = start_timeout
        self.host = "127.0.0.1"
        self.port = 0
        self.etcd_port = 0
        self.token = secrets.token_hex(24)
        self.ca: CertificateAuthority | None = None
        self.etcd: _Process | None = None
        self.apiserver: _Process | None = None
        self._crash: asyncio.Future[str] | None = None
        self._watchers = BackgroundTasks(f"control plane {name}")
        self.started_in = 0.0  # seconds from start() to /readyz

    # --- what clients need -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"

    @property
    def ca_pem(self) -> bytes:
        assert self.ca is not None, "the server has not started"
        return self.ca.cert_pem

    def kubeconfig_entry(self, *, namespace: str = "default") -> KubeconfigEntry:
        return KubeconfigEntry(self.name, self.url, ca_pem=self.ca_pem, token=self.token, namespace=namespace)

    def ssl_context(self) -> ssl.SSLContext:
        return client_ssl_context(self.ca_pem)

    @property
    def logs(self) -> dict[str, Path]:
        return {"etcd": self.dir / "etcd.log", "kube-apiserver": self.dir / "kube-apiserver.log"}

    # --- files -----------------------------------------------------------------------------------------

    def _write_files(self) -> dict[str, Path]:
        pki = self.dir / "pki"
        pki.mkdir(parents=True, exist_ok=True)
        self.ca = CertificateAuthority.generate(common_name=f"omectl-envtest-{self.name}-ca")
        serving = self.ca.issue([self.host, "localhost"])
        files = {
            "ca": pki / "ca.crt",
            "cert": pki / "apiserver.crt",
            "key": pki / "apiserver.key",
            "sa": pki / "service-account.key",
            "tokens": self.dir / "tokens.csv",
        }
        files["ca"].write_bytes(self.ca.cert_pem)
        files["cert"].write_bytes(serving.cert_pem)
        files["key"].write_bytes(serving.key_pem)
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        files["sa"].write_bytes(
            sa_key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )
        # token,user,uid,"group1,group2"
        files["tokens"].write_text(f'{self.token},{ADMIN_USER},{ADMIN_USER},"{ADMIN_GROUP}"\n')
        for path in (files["key"], files["sa"], files["tokens"]):
            path.chmod(0o600)
        return files

    def etcd_argv(self) -> list[str]:
        client = f"http://{self.host}:{self.etcd_port}"
        return [
            str(self.binaries.etcd),
            f"--name={self.name}",
            f"--data-dir={self.dir / 'etcd'}",
            f"--listen-client-urls={client}",
            f"--advertise-client-urls={client}",
            f"--listen-peer-urls=http://{self.host}:0",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ]

    def apiserver_argv(self, files: dict[str, Path]) -> list[str]:
        return [
            str(self.binaries.kube_apiserver),
            f"--etcd-servers=http://{self.host}:{self.etcd_port}",
            f"--cert-dir={self.dir / 'certs'}",
            f"--tls-cert-file={files['cert']}",
            f"--tls-private-key-file={files['key']}",
            f"--bind-address={self.host}",
            f"--advertise-address={self.host}",
            f"--secure-port={self.port}",
            f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
            f"--service-account-key-file={files['sa']}",
            f"--service-account-signing-key-file={files['sa']}",
            f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
            f"--token-auth-file={files['tokens']}",
            "--authorization-mode=RBAC",
            "--disable-admission-plugins=ServiceAccount",
            "--allow-privileged=true",
            *self.extra_args,
        ]

    # --- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> RealAPIServer:
        """Start etcd, then kube-apiserver, and return once /readyz says ok; a free port taken meanwhile by
        someone else is retried with new ports."""
        begin = time.monotonic()
        self.dir.mkdir(parents=True, exist_ok=True)
        files = self._write_files()
        loop = asyncio.get_running_loop()
        self._crash = loop.create_future()
        for attempt in range(3):
            try:
                await self._start_etcd()
                break
            except ControlPlaneError as exc:
                if "address already in use" not in str(exc) or attempt == 2:
                    raise
        for attempt in range(3):
            try:
                await self._start_apiserver(files)
                break
            except ControlPlaneError as exc:
                if "address already in use" not in str(exc) or attempt == 2:
                    await self.stop()
                    raise
        self.started_in = time.monotonic() - begin
        return self

    async def _start_etcd(self) -> None:
        self.etcd_port = free_port(self.host)
        self.etcd = _Process("etcd", self.etcd_argv(), self.logs["etcd"])
        await self.etcd.start()
        url = f"http://{self.host}:{self.etcd_port}/health"
        await self._wait_until(self.etcd, url, None, lambda status, body: status == 200 and b'"true"' in body)
        self._watch(self.etcd)

    async def _start_apiserver(self, files: dict[str, Path]) -> None:
        self.port = free_port(self.host)
        self.apiserver = _Process("kube-apiserver", self.apiserver_argv(files), self.logs["kube-apiserver"])
        await self.apiserver.start()
        await self._wait_until(
            self.apiserver, f"{self.url}/readyz", self.ssl_context(), lambda status, body: status == 200
        )
        self._watch(self.apiserver)

    async def _wait_until(
        self,
        process: _Process,
        url: str,
        ssl_context: ssl.SSLContext | None,
        ok: Callable[[int, bytes], bool],
    ) -> None:
        """Poll `url` until `ok(status, body)`, the process dies (its log tail), or the deadline passes."""
        deadline = time.monotonic() + self.start_timeout
        headers = {"Authorization": f"Bearer {self.token}"}
        last = "no answer yet"
        timeout = aiohttp.ClientTimeout(total=5)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            while True:
                if process.exited:
                    raise ControlPlaneError(f"cluster {self.name}: {process.crash_report()}")
                try:
                    async with session.get(url, headers=headers, ssl=ssl_context or False) as resp:
                        body = await resp.read()
                        if ok(resp.status, body):
                            return
                        last = f"HTTP {resp.status}: {body[:300].decode(errors='replace')}"
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    last = f"{type(exc).__name__}: {exc}"
                if time.monotonic() > deadline:
                    await process.stop()
                    raise ControlPlaneError(
                        f"cluster {self.name}: {process.name} not ready after {self.start_timeout:.0f} s ({last}); "
                        f"the last lines of {process.log}:\n{log_tail(process.log)}"
                    )
                await asyncio.sleep(0.1)

    def _watch(self, process: _Process) -> None:
        async def watch() -> None:
            assert process.proc is not None
            await process.proc.wait()
            if not process.stopping and self._crash is not None and not self._crash.done():
                self._crash.set_result(f"cluster {self.name}: {process.crash_report()}")

        self._watchers.spawn(watch(), f"{self.name}-{process.name}")

    async def wait_crashed(self) -> str:
        """Wait until etcd or kube-apiserver dies without being asked to; returns the report with the log tail."""
        assert self._crash is not None, "the server has not started"
        return await asyncio.shield(self._crash)

    @property
    def crashed(self) -> str | None:
        return self._crash.result() if self._crash is not None and self._crash.done() else None

    async def stop(self) -> None:
        """kube-apiserver first (it flushes to etcd), then etcd; each SIGTERM, then SIGKILL after a grace."""
        for process in (self.apiserver, self.etcd):
            if process is not None:
                await process.stop()
        await self._watchers.stop()

    async def __aenter__(self) -> RealAPIServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def pids(self) -> dict[str, int | None]:
        return {
            "etcd": self.etcd.pid if self.etcd else None,
            "kube-apiserver": self.apiserver.pid if self.apiserver else None,
        }
