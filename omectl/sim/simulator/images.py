"""The container registry the simulated nodes pull from: every image is there except the ones declared missing.

The simulator downloads nothing. An image is "pulled" unless it matches one of `ImageRegistry.missing`, glob
patterns (`fnmatch`: `*` is any run of characters, `/` included; `?` one character; `[...]` a class) tried against
the image as the pod names it and against its fully qualified reference (`nginx` is
`docker.io/library/nginx:latest`), so `*:v0.0.0-bad` and `docker.io/lmsysorg/sglang:*-rc*` both work. A missing
image fails as containerd fails a pull of a tag its registry does not have, and the text is the one the CRI hands
kubelet.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

DEFAULT_DOMAIN = "docker.io"
OFFICIAL_REPOSITORY_PREFIX = "library/"  # Docker Hub's namespace of official images (`nginx`)


@dataclass(frozen=True)
class ImageRegistry:
    """The simulated registry: it has every image except those matching a `missing` pattern."""

    missing: tuple[str, ...] = ()

    def pull_error(self, image: str) -> str | None:
        """The container runtime's error for pulling `image`, or None when the registry has it."""
        reference = qualified_reference(image)
        if not any(fnmatchcase(image, p) or fnmatchcase(reference, p) for p in self.missing):
            return None
        return (
            f'rpc error: code = NotFound desc = failed to pull and unpack image "{reference}": '
            f'failed to resolve reference "{reference}": {reference}: not found'
        )

    def describe(self) -> str:
        return ", ".join(self.missing)


def qualified_reference(image: str) -> str:
    """The reference containerd resolves: a registry domain (default docker.io, official images under library/)
    and a tag (default latest) unless a digest is given."""
    name, at, digest = image.partition("@")
    first, slash, rest = name.partition("/")
    if not slash or not ("." in first or ":" in first or first == "localhost"):
        name = f"{DEFAULT_DOMAIN}/{name}"
        first, rest = DEFAULT_DOMAIN, name.partition("/")[2]
    if first == DEFAULT_DOMAIN and "/" not in rest:
        name = f"{DEFAULT_DOMAIN}/{OFFICIAL_REPOSITORY_PREFIX}{rest}"
    if not at and ":" not in name.rpartition("/")[2]:
        name += ":latest"
    return f"{name}{at}{digest}"
