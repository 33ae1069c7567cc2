"""What the builders of mnemic's shipped word tables share: the same bytes on every run."""

from __future__ import annotations

import gzip
import io


def deterministic_gzip(text: str) -> bytes:
    """`text` gzipped with no timestamp, so a table rebuilt from the same input is byte for byte
    the same (the builders' `--check` compares bytes)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as out:
        out.write(text.encode("utf-8"))
    return buffer.getvalue()
