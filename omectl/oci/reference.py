"""An image reference as a container runtime reads it: `[registry/]repository[:tag][@digest]`, Docker Hub when the
first part names no registry (a `.`, a `:` or `localhost`), `library/` before a one-part Docker Hub name, tag `latest`
when it gives neither tag nor digest."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

DOCKER_HUB: Final = "docker.io"
DOCKER_HUB_API: Final = "registry-1.docker.io"
DOCKER_HUB_ALIASES: Final = frozenset({DOCKER_HUB, "index.docker.io", DOCKER_HUB_API})
_REPOSITORY: Final = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$")
_TAG: Final = re.compile(r"^[\w][\w.-]{0,127}$")
_DIGEST: Final = re.compile(r"^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$")


@dataclass(frozen=True)
class ImageReference:
    registry: str
    repository: str
    tag: str | None
    digest: str | None

    @property
    def identifier(self) -> str:
        """What the manifest is fetched by: the digest when given, else the tag."""
        return self.digest or self.tag or "latest"

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}" + (f"@{self.digest}" if self.digest else f":{self.tag}")


def parse_reference(image: str) -> ImageReference:
    """The reference (module docstring); ValueError when `image` is not one."""
    rest, digest = image.strip(), None
    if "@" in rest:
        rest, digest = rest.split("@", 1)
        if not _DIGEST.match(digest):
            raise ValueError(f"could not parse reference: {image}")
    tag = None
    last = rest.rsplit("/", 1)[-1]
    if ":" in last:
        rest, tag = rest.rsplit(":", 1)
        if not _TAG.match(tag):
            raise ValueError(f"could not parse reference: {image}")
    first, _, remainder = rest.partition("/")
    if remainder and ("." in first or ":" in first or first == "localhost"):
        registry, repository = first, remainder
    else:
        registry, repository = DOCKER_HUB, rest
    if registry in DOCKER_HUB_ALIASES:
        registry = DOCKER_HUB
        if "/" not in repository:
            repository = f"library/{repository}"
    if not _REPOSITORY.match(repository):
        raise ValueError(f"could not parse reference: {image}")
    return ImageReference(registry, repository, tag if tag or digest else "latest", digest)
