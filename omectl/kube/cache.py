"""`ObjectCache`: an informer's store of plain dicts keyed by (namespace, name), with named secondary indexes.

Objects are stored as the informer's transform left them and handed out as they are: reads never copy, so
callers must treat every returned dict as read-only and build a new dict to change anything. Each object is held
once, in a map of namespace -> name -> object; an index holds keys, not objects.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator
from typing import Any

__all__ = ["IndexFunc", "ObjectCache", "ObjectKey", "object_key"]

ObjectKey = tuple[str, str]  # (namespace, or "" for cluster-scoped objects; name)
IndexFunc = Callable[[dict[str, Any]], Iterable[str]]


def object_key(obj: dict[str, Any]) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace") or "", meta["name"])


class ObjectCache:
    """The objects of one kind in one cluster, as the informer last saw them."""

    def __init__(self) -> None:
        self._by_namespace: dict[str, dict[str, dict[str, Any]]] = {}  # namespace -> name -> object
        self._count = 0
        self.changes = 0  # upserts and deletes so far: while it stands still, every read answers as before
        self._index_funcs: dict[str, IndexFunc] = {}
        # index name -> index value -> keys of the objects carrying that value (a dict as a set: a third of the
        # memory of a set for the few keys most values have). An object is unfiled by its index values computed
        # again from the object itself, which the cache still holds (cached objects are never changed in place).
        self._indexes: dict[str, dict[str, dict[ObjectKey, None]]] = {}
        self.resource_version: str = ""  # the newest resourceVersion the informer has seen (list, event or bookmark)
        # Set once the informer's first full list is in: from then on a miss means the object does not exist (as
        # of the informer's view, which may lag the server by a watch event) among those its selector admits.
        self.complete = False

    # --- indexes -----------------------------------------------------------------------------------------

    def add_index(self, name: str, fn: IndexFunc) -> None:
        """Register an index; objects already cached are filed at once."""
        if name in self._index_funcs:
            raise ValueError(f"index {name!r} is already registered")
        self._index_funcs[name] = fn
        self._indexes[name] = {}
        for obj in self._all():
            self._file(name, fn, object_key(obj), obj)

    def by_index(self, name: str, value: str) -> list[dict[str, Any]]:
        """The objects whose index function returned `value` (in no particular order)."""
        try:
            keys = self._indexes[name].get(value, ())
        except KeyError:
            raise KeyError(f"no index named {name!r}; registered: {sorted(self._index_funcs)}") from None
        return [self._by_namespace[namespace][name] for namespace, name in keys]

    def index_values(self, name: str) -> list[str]:
        """Every value the index currently holds at least one object under."""
        return list(self._indexes[name])

    def _file(self, name: str, fn: IndexFunc, key: ObjectKey, obj: dict[str, Any]) -> None:
        index = self._indexes[name]
        for value in dict.fromkeys(fn(obj)):
            index.setdefault(value, {})[key] = None

    def _unfile(self, name: str, fn: IndexFunc, key: ObjectKey, old: dict[str, Any]) -> None:
        index = self._indexes[name]
        for value in dict.fromkeys(fn(old)):
            keys = index.get(value)
            if keys is not None:
                keys.pop(key, None)
                if not keys:
                    del index[value]

    # --- writes (the informer's) -------------------------------------------------------------------------

    def upsert(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """Store `obj` (taking ownership of it: `managedFields` is removed in place); returns the previous one."""
        obj["metadata"].pop("managedFields", None)
        key = object_key(obj)
        names = self._by_namespace.setdefault(key[0], {})
        old = names.get(key[1])
        names[key[1]] = obj
        self.changes += 1
        if old is None:
            self._count += 1
        for name, fn in self._index_funcs.items():
            if old is not None:
                self._unfile(name, fn, key, old)
            self._file(name, fn, key, obj)
        return old

    def delete(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Remove an object; returns it, or None when it was not cached."""
        key = (namespace or "", name)
        names = self._by_namespace.get(key[0])
        old = names.pop(name, None) if names is not None else None
        if old is not None:
            self._count -= 1
            self.changes += 1
            if not names:
                del self._by_namespace[key[0]]
            for index_name, fn in self._index_funcs.items():
                self._unfile(index_name, fn, key, old)
        return old

    # --- reads -------------------------------------------------------------------------------------------

    def get(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        names = self._by_namespace.get(namespace or "")
        return names.get(name) if names is not None else None

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        if namespace is None:
            return self._all()
        return list(self._by_namespace.get(namespace, {}).values())

    def _all(self) -> builtins.list[dict[str, Any]]:
        return [obj for names in self._by_namespace.values() for obj in names.values()]

    def object_keys(self) -> builtins.list[ObjectKey]:
        return [(namespace, name) for namespace, names in self._by_namespace.items() for name in names]

    def __len__(self) -> int:
        return self._count

    def __contains__(self, key: object) -> bool:
        return isinstance(key, tuple) and len(key) == 2 and self.get(*key) is not None

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._all())
