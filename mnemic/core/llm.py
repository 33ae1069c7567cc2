"""The one module that talks to litellm, so provider quirks and the heavy import stay in one place.

litellm is imported lazily: importing mnemic must stay fast and must work offline.
"""

from __future__ import annotations

from typing import Any


def embed_texts(model: str, texts: list[str], **kwargs: Any) -> list[list[float]]:
    """Embed `texts` with a litellm embedding model string, returning one vector per text, in order."""
    import litellm

    response = litellm.embedding(model=model, input=texts, **kwargs)
    data = response["data"] if isinstance(response, dict) else response.data
    items: list[tuple[int, list[float]]] = []
    for position, item in enumerate(data):
        if isinstance(item, dict):
            index, vector = item.get("index", position), item["embedding"]
        else:
            index, vector = getattr(item, "index", position), item.embedding
        items.append((int(index if index is not None else position), list(vector)))
    # Providers may answer out of order; `index` says which input each vector belongs to.
    items.sort(key=lambda pair: pair[0])
    return [vector for _, vector in items]
