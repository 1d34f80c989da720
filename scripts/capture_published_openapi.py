"""Capture the OpenAPI v3 schemas a real kube-apiserver publishes for the built-in kinds the embedded server serves.

    .venv/bin/python scripts/capture_published_openapi.py [--check]

Starts etcd + kube-apiserver from the `make envtest` binaries, reads `/openapi/v3/<gv>` for every built-in
group-version the embedded server serves, and writes `omectl/sim/apiserver/published-openapi.json.gz` (see
`omectl.sim.apiserver.published_openapi`). With `--check` it writes nothing and exits 1 when the capture differs.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from typing import Any

import aiohttp

from omectl.envtest import BinariesMissing, RealAPIServer, find_binaries
from omectl.sim.apiserver import published_openapi
from omectl.sim.apiserver.openapi import builtin_schema_roots, served_gv_paths
from omectl.sim.apiserver.registry import builtin_types


async def published_documents(server: RealAPIServer, gv_paths: list[str]) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {server.token}", "Accept": "application/json"}
    async with aiohttp.ClientSession(headers=headers) as session:
        docs = []
        for gv_path in gv_paths:
            async with session.get(f"{server.url}/openapi/v3/{gv_path}", ssl=server.ssl_context()) as reply:
                reply.raise_for_status()
                docs.append(await reply.json())
        return docs


async def capture() -> dict[str, Any]:
    binaries = find_binaries()
    with tempfile.TemporaryDirectory(prefix="omectl-openapi-") as workdir:
        server = RealAPIServer("capture", workdir, binaries=binaries)
        await server.start()
        try:
            docs = await published_documents(server, served_gv_paths(builtin_types()))
        finally:
            await server.stop()
    return published_openapi.extract(docs, builtin_schema_roots(), binaries.kube_version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed capture, write nothing")
    args = parser.parse_args(argv)
    try:
        content = asyncio.run(capture())
    except BinariesMissing as exc:
        print(f"error: {exc} (build them with `make envtest`)", file=sys.stderr)
        return 1
    data = published_openapi.encode(content)
    path = published_openapi.DATA_FILE
    if args.check:
        same = path.exists() and path.read_bytes() == data
        print(f"{path}: {'up to date' if same else 'differs from what the real server publishes'}")
        return 0 if same else 1
    path.write_bytes(data)
    print(f"wrote {path} ({len(content['schemas'])} schemas, kube-apiserver {content['kubernetesVersion']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
