"""The kopf peer's merged runtime specs, memoized by chain: the identity and resourceVersion of each runtime in it.

A chain's merge is computed once per version of its runtimes, as a kopf operator rendering thousands of
InferenceServices from a few hundred runtimes would keep it (omectl's shared resolver goes further: a chain's merge
starts from its parent's). Bounded: past `limit` chains the memo starts over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from omectl.core.ome.inheritance import ResolvedChain, spec_layers
from omectl.core.ome.merge import merge_chain
from omectl.core.ome.runtimes import RuntimeRef

ChainKey = tuple[tuple[RuntimeRef, str], ...]


class Merges:
    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self.memo: dict[ChainKey, Mapping[str, Any]] = {}
        self.computed = 0

    def merged(self, chain: ResolvedChain) -> Mapping[str, Any]:
        key = tuple(zip(chain.refs, chain.resource_versions, strict=True))
        found = self.memo.get(key)
        if found is None:
            if len(self.memo) >= self.limit:
                self.memo.clear()
            found = self.memo[key] = merge_chain(spec_layers(chain)).spec
            self.computed += 1
        return found
