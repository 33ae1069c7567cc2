"""How mnemic names what it keeps in Chroma, and whose each collection is.

Collection names carry a slug of the namespace (`namespace_slug`) and, for a user's records, a
hash of the user id (`owner_key`): Chroma's names allow few characters, and a user id is not
written into a name. Two namespaces can share a slug, so every collection also records the
namespace it was made for, and `claim` refuses one made for another. A collection another process
dropped answers NotFoundError; `again_if_dropped` opens it once more instead of failing for good.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

_NAME_SAFE = re.compile(r"[^a-zA-Z0-9_-]+")
MEMORY_COLLECTION_INFIX = "-m-"


class NamespaceCollisionError(ValueError):
    """A namespace's collection names are already taken by another namespace of the database."""


def claim(collection: Any, namespace: str) -> Any:
    """`collection`, after checking that it belongs to `namespace`.

    Collection names carry a slug of the namespace, and two namespaces can share a slug ("tenant a"
    and "tenant_a_<its hash>", or any two whose 32-bit hash suffixes meet): without this check the
    second would read and erase the first one's records. Every collection records the namespace it
    was made for; one made for another namespace is refused, never served. Collections from before
    the bookkeeping ones recorded theirs carry none and are accepted.
    """
    owner = (getattr(collection, "metadata", None) or {}).get("namespace")
    if owner is not None and owner != namespace:
        raise NamespaceCollisionError(
            f"namespace {namespace!r} cannot be used in this database: its collection "
            f"{getattr(collection, 'name', '?')!r} belongs to another namespace whose name maps to the same "
            f"storage name. Nothing was read or changed; give this namespace another name.")
    return collection


def namespace_slug(namespace: str) -> str:
    """A collection-name-safe form of a namespace, unique even when the raw name is not safe."""
    safe = _NAME_SAFE.sub("_", namespace)[:40].strip("_-") or "ns"
    if safe != namespace:
        safe += "_" + hashlib.sha256(namespace.encode("utf-8")).hexdigest()[:8]
    return safe


def is_gone(exc: Exception) -> bool:
    """Chroma's error for a collection that was dropped (NotFoundError; ValueError in old releases)."""
    return type(exc).__name__ == "NotFoundError" or "does not exist" in str(exc)


def _meta_name(namespace: str) -> str:
    return f"mnemic-{namespace_slug(namespace)}-meta"


def has_namespace(client: Any, namespace: str) -> bool:
    """Whether the database holds `namespace` (every opened namespace has its settings
    collection), asked without creating anything, unlike opening a Memory on it."""
    try:
        meta = client.get_collection(_meta_name(namespace), embedding_function=None)
    except Exception:  # chromadb raises NotFoundError (or ValueError in older releases)
        return False
    owner = (getattr(meta, "metadata", None) or {}).get("namespace")
    return owner is None or owner == namespace


def namespaces(client: Any) -> list[str]:
    """The namespaces the database holds, sorted, read from their settings collections (a
    namespace from before these recorded their name shows as its storage name)."""
    found = set()
    for collection in client.list_collections():
        name = collection if isinstance(collection, str) else collection.name
        if not (name.startswith("mnemic-") and name.endswith("-meta")):
            continue
        handle = collection if not isinstance(collection, str) else client.get_collection(
            name, embedding_function=None)
        metadata = getattr(handle, "metadata", None) or {}
        if metadata.get("mnemic", "meta") != "meta":
            continue
        owner = metadata.get("namespace")
        found.add(owner if isinstance(owner, str) else name[len("mnemic-"):-len("-meta")])
    return sorted(found)


def owner_key(user_id: str) -> str:
    return hashlib.sha256(user_id.encode("utf-8")).hexdigest()[:32]


def again_if_dropped(open_collection: Callable[[], Any | None], operation: Callable[[Any], T],
                     forget: Callable[[], None], missing: T) -> T:
    """`operation` on the collection `open_collection` gives (`missing` when there is none). A
    cached handle whose collection was dropped meanwhile (another process erased it, a repair
    rebuilt it) is forgotten and opened once more: Chroma answered NotFoundError to every later call."""
    for attempt in (1, 2):
        collection = open_collection()
        if collection is None:
            return missing
        try:
            return operation(collection)
        except Exception as exc:
            if attempt == 2:
                raise
            forget()
            if not is_gone(exc):
                # A collection dropped while the call ran (another thread's erasure) fails it with
                # whatever Chroma hit first ("Missing metadata segment"): if it is gone now, so is
                # what the call was after; any other failure is the caller's to see.
                if open_collection() is None:
                    return missing
                raise
    return missing
