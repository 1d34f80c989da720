"""Image references as a container runtime reads them (omectl.oci.reference)."""

from __future__ import annotations

import pytest

from omectl.oci.reference import ImageReference, parse_reference

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("ghcr.io/silogen/aim-dummy:0.1.10", ImageReference("ghcr.io", "silogen/aim-dummy", "0.1.10", None)),
        ("busybox", ImageReference("docker.io", "library/busybox", "latest", None)),
        ("amd/aim:1", ImageReference("docker.io", "amd/aim", "1", None)),
        ("index.docker.io/busybox:1", ImageReference("docker.io", "library/busybox", "1", None)),
        ("localhost:5000/a/b", ImageReference("localhost:5000", "a/b", "latest", None)),
        (f"ghcr.io/x/y@{DIGEST}", ImageReference("ghcr.io", "x/y", None, DIGEST)),
        (f"ghcr.io/x/y:1@{DIGEST}", ImageReference("ghcr.io", "x/y", "1", DIGEST)),
    ],
)
def test_references_get_docker_hubs_defaults_and_keep_tag_and_digest(image: str, expected: ImageReference) -> None:
    parsed = parse_reference(image)
    assert parsed == expected
    assert parsed.identifier == (expected.digest or expected.tag)


@pytest.mark.parametrize("image", ["", "Upper/Case", "ghcr.io/x/y:bad tag", "ghcr.io/x/y@sha256"])
def test_malformed_references_are_refused(image: str) -> None:
    with pytest.raises(ValueError, match="could not parse reference"):
        parse_reference(image)
