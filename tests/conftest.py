from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiohttp
import pytest
from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config

from omectl.sim.apiserver.server import EmbeddedAPIServer
from omectl.sim.fleet import BackgroundFleet, EmbeddedFleet
from tests.support import Kubectl, RawClient, kubectl_path

# A shell that starts a job in the background without job control (`make test &` in a script) has it ignore SIGINT,
# and an ignored signal stays ignored through exec: the CLI processes the tests interrupt, as a user presses Ctrl-C,
# would never see it. The tests run as from a terminal, where SIGINT interrupts (a handled signal is default again
# after exec).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    """One embedded cluster on the test's own event loop."""
    srv = EmbeddedAPIServer("test", bookmark_interval=0.2)
    await srv.start()
    yield srv
    await srv.stop()


@pytest.fixture
async def raw(server: EmbeddedAPIServer) -> AsyncIterator[RawClient]:
    async with aiohttp.ClientSession() as session:
        yield RawClient(server.url, session, server.auth_headers)


@pytest.fixture
async def kube(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[k8s_client.ApiClient]:
    """A real kubernetes-asyncio ApiClient configured from the server's kubeconfig."""
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    api_client = await k8s_config.new_client_from_config(config_file=str(path))
    async with api_client:
        yield api_client


@pytest.fixture
def kubectl_binary() -> str:
    return kubectl_path()


@pytest.fixture
async def kubectl(server: EmbeddedAPIServer, tmp_path: Path, kubectl_binary: str) -> Kubectl:
    """kubectl against the async `server` fixture: use `await kubectl.arun(...)`."""
    path = server.write_kubeconfig(tmp_path / "kubeconfig")
    return Kubectl(kubectl_binary, path, tmp_path / "kube-cache")


@pytest.fixture(scope="module")
def bg_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundFleet]:
    """Two clusters on a background thread, shared by one test module (sync kubectl tests)."""
    fleet = BackgroundFleet(EmbeddedFleet(2, name_prefix="bg-"))
    fleet.start()
    yield fleet
    fleet.stop()


@pytest.fixture(scope="module")
def fleet_kubectl(bg_fleet: BackgroundFleet, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = kubectl_path()
    base = tmp_path_factory.mktemp("fleet-kubectl")
    path = bg_fleet.fleet.write_kubeconfig(base / "kubeconfig")
    return Kubectl(binary, path, base / "kube-cache")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """`--dist loadgroup` sends the tests of one `xdist_group` to one worker, by the `@group` ending of their ids.
    pytest-xdist 3.8 writes that id to `item._nodeid`, which pytest 9.2 no longer reads (a node's id is its `_id`), so
    every group was ignored: the tests of a group ran on both workers, each making the group's module-scoped set-up.
    The worker gives each grouped test the id xdist meant (nothing to do where xdist's own id holds)."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        names = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = type(item._id).parse(item.nodeid + suffix)
    # Longest first: xdist hands out the large groups first (by their count of tests), then the units of one test in
    # collection order, so a long one left for the end runs alone while the other worker idles.
    items.sort(key=lambda item: -max((int(m.args[0]) for m in item.iter_markers("long")), default=0))
