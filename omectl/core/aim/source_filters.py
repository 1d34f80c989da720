"""Which images a v1alpha1 AIMClusterModelSource's filters take (docs/aim-versions.md, "What a v1alpha1 source
scans"), as upstream's aimclustermodelsource filtering decides it.

- **A filter's image** (`parse_filter`): with a `*` it is a repository pattern, its registry the part before the first
  `/` when that part has a `.` (`ghcr.io/org/aim-*`); without, an image reference (`parse_reference`): its registry
  unless Docker Hub, its repository, and its tag only when the text has a `:` (a digest reference has none). Text
  that is no reference is a repository as it is.
- **A wildcard** (`matches_wildcard`): only `*`, any run of characters (none included); no `*` is equality.
- **An image matches a filter** (`matches_filter`) when the filter names no registry or the image's, its repository
  matches the pattern, it is not one of the filter's `exclude` (repository names, exactly), and its tag is the
  filter's tag when it has one, else meets every version constraint (the filter's `versions`, else the source's);
  with none, every tag does.
- **Version constraints** (`matches_versions`, blang/semver's ranges): the tag without a leading `v` must be a strict
  semantic version (`MAJOR.MINOR.PATCH[-pre][+build]`, no leading zeros), else it matches nothing. Each constraint
  is `||`-separated alternatives of space-separated comparisons (`>`, `>=`, `<`, `<=`, `=`/`==` or none, `!=`/`!`),
  all of which must hold; one version with a single dot gets `.0` appended first (`>=0.9` is `>=0.9.0`). A
  constraint that does not parse (`~1.2.0`, `^1.0.0`, `1.x`) is ignored.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from omectl.core.jsonish import as_list
from omectl.oci.reference import DOCKER_HUB, parse_reference

_SEMVER: Final = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$"
)
_COMPARISON: Final = re.compile(r"^(>=|<=|>|<|==|=|!=|!)?(.+)$")
_OPERATORS: Final = (">=", "<=", "!=", "==", ">", "<", "=", "!")

Version = tuple[int, int, int, tuple[tuple[int, int | str], ...]]
"""Major, minor, patch, and the pre-release identifiers, each `(0, number)` or `(1, text)` (numbers sort first)."""
Comparison = Callable[[Version], bool]


@dataclass(frozen=True)
class ImageFilter:
    registry: str | None
    """The registry the filter names (never Docker Hub's); None: the source's."""
    repository: str
    """The repository, or the pattern with `*`."""
    tag: str | None
    wildcard: bool


@dataclass(frozen=True)
class FoundImage:
    """An image a filter takes: `registry/repository:tag`."""

    registry: str
    repository: str
    tag: str

    @property
    def uri(self) -> str:
        """The image as a model names it: Docker Hub's without its registry (`amdenterpriseai/aim-x:0.8.4`)."""
        if self.registry in ("", DOCKER_HUB):
            return f"{self.repository}:{self.tag}"
        return f"{self.registry}/{self.repository}:{self.tag}"


def parse_filter(image: str) -> ImageFilter:
    """A filter's image (module docstring)."""
    if "*" in image:
        first, slash, rest = image.partition("/")
        if slash and first and "." in first:
            return ImageFilter(first, rest, None, True)
        return ImageFilter(None, image, None, True)
    try:
        reference = parse_reference(image)
    except ValueError:
        return ImageFilter(None, image, None, False)
    registry = None if reference.registry == DOCKER_HUB else reference.registry
    tag = reference.tag if reference.digest is None and ":" in image else None
    return ImageFilter(registry, reference.repository, tag, False)


def matches_wildcard(pattern: str, text: str) -> bool:
    """Whether `text` matches `pattern`, `*` any run of characters (module docstring)."""
    parts = pattern.split("*")
    if len(parts) == 1:
        return pattern == text
    first, last = parts[0], parts[-1]
    if not text.startswith(first):
        return False
    text = text[len(first) :]
    if not text.endswith(last):
        return False
    text = text[: len(text) - len(last)]
    for middle in parts[1:-1]:
        found = text.find(middle)
        if found < 0:
            return False
        text = text[found + len(middle) :]
    return True


def filter_versions(entry: Mapping[str, Any], source_versions: Sequence[str]) -> list[str]:
    """The version constraints of a filter: its own, else the source's."""
    own = [str(v) for v in as_list(entry.get("versions"))]
    return own or [str(v) for v in source_versions]


def matches_filter(image: FoundImage, entry: Mapping[str, Any], source_versions: Sequence[str]) -> bool:
    """Whether the filter `entry` (`image`, `exclude`, `versions`) takes `image` (module docstring)."""
    parsed = parse_filter(str(entry.get("image") or ""))
    if parsed.registry is not None and parsed.registry != image.registry:
        return False
    if not matches_wildcard(parsed.repository, image.repository):
        return False
    if image.repository in {str(e) for e in as_list(entry.get("exclude"))}:
        return False
    if parsed.tag is not None:
        return image.tag == parsed.tag
    constraints = filter_versions(entry, source_versions)
    return not constraints or matches_versions(image.tag, constraints)


def matches_versions(tag: str, constraints: Sequence[str]) -> bool:
    """Whether the tag is a semantic version meeting every constraint that parses (module docstring)."""
    version = parse_version(tag.removeprefix("v"))
    if version is None:
        return False
    for constraint in constraints:
        alternatives = _parse_range(_normalized(constraint))
        if alternatives is not None and not any(all(c(version) for c in a) for a in alternatives):
            return False
    return True


def parse_version(text: str) -> Version | None:
    """A strict semantic version, or None."""
    found = _SEMVER.match(text)
    if found is None:
        return None
    pre = tuple((0, int(p)) if p.isdigit() else (1, p) for p in found.group(4).split(".")) if found.group(4) else ()
    return int(found.group(1)), int(found.group(2)), int(found.group(3)), pre


def _key(version: Version) -> tuple[Any, ...]:
    """Precedence: a version without pre-release identifiers after every one with them."""
    major, minor, patch, pre = version
    return (major, minor, patch, (1,) if not pre else (0, pre))


def _normalized(constraint: str) -> str:
    """`.0` appended to the version after the first operator when it has one dot only (`>=0.9` -> `>=0.9.0`)."""
    for index, char in enumerate(constraint):
        if char.isdigit():
            version = constraint[index:].strip()
            return constraint[:index] + (version + ".0" if version.count(".") == 1 else version)
    return constraint


def _parse_range(constraint: str) -> list[list[Comparison]] | None:
    """The alternatives (each a list of comparisons) of a range, or None when it does not parse."""
    alternatives: list[list[Comparison]] = []
    for part in constraint.split("||"):
        words = part.split()
        merged: list[str] = []
        for word in words:  # an operator written apart from its version (`>= 1.0.0`) belongs to it
            if merged and merged[-1] in _OPERATORS:
                merged[-1] += word
            else:
                merged.append(word)
        if not merged:
            return None
        comparisons = [_comparison(word) for word in merged]
        if None in comparisons:
            return None
        alternatives.append([c for c in comparisons if c is not None])
    return alternatives


def _comparison(word: str) -> Comparison | None:
    found = _COMPARISON.match(word)
    version = parse_version(found.group(2)) if found else None
    if found is None or version is None:
        return None
    bound, operator = _key(version), found.group(1) or "="
    tests: dict[str, Comparison] = {
        ">": lambda v: _key(v) > bound,
        ">=": lambda v: _key(v) >= bound,
        "<": lambda v: _key(v) < bound,
        "<=": lambda v: _key(v) <= bound,
        "=": lambda v: _key(v) == bound,
        "==": lambda v: _key(v) == bound,
        "!=": lambda v: _key(v) != bound,
        "!": lambda v: _key(v) != bound,
    }
    return tests[operator]
