"""Turning operator documents into standalone passages: chunking and the file readers.

Pure text work, no Chroma and no embedder, so every reader is checked before anything is written.
Offsets (`char_start`, `char_end`) point into the document's extracted text: the file itself for
.txt, the text with markup stripped for .md, the rendered "key: value" lines for .json and .csv,
and the pages joined by blank lines for .pdf.
"""

from __future__ import annotations

import bisect
import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .validation import check_clean

CHUNK_CHARS = 800
OVERLAP_CHARS = 100

TEXT_SUFFIXES = (".txt", ".text")
MARKDOWN_SUFFIXES = (".md", ".markdown")
JSON_SUFFIXES = (".json",)
CSV_SUFFIXES = (".csv", ".tsv")
PDF_SUFFIXES = (".pdf",)
SUPPORTED_SUFFIXES = TEXT_SUFFIXES + MARKDOWN_SUFFIXES + JSON_SUFFIXES + CSV_SUFFIXES + PDF_SUFFIXES

_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n\s*")
# A sentence ends at . ! ? (or a line end), possibly followed by closing quotes or brackets.
_SENTENCE_BREAK = re.compile(r"(?:[.!?…][\"'”’)\]]*(?=\s)|(?=\n))")
_WHITESPACE = re.compile(r"\s+")


class DocumentError(ValueError):
    """A document that cannot be ingested: unreadable, empty, corrupt or of an unsupported type."""


class UnsupportedDocumentError(DocumentError):
    """A file type the knowledge store has no reader for."""


@dataclass(frozen=True)
class Passage:
    """A standalone piece of a document, and where in the document it sits."""

    text: str
    char_start: int
    char_end: int
    section: str | None = None
    page: int | None = None


# -- chunking ----------------------------------------------------------------------------------


def chunk_text(
    text: str,
    *,
    size: int = CHUNK_CHARS,
    overlap: int = OVERLAP_CHARS,
    base_offset: int = 0,
) -> list[Passage]:
    """Windows of at most `size` characters that end at the best break available.

    A window ends at the last paragraph break in its second half, else the last sentence end,
    else the last space, else exactly at `size`. The next window repeats up to `overlap`
    characters of the previous one, starting at a sentence (or at least a word) so it reads on
    its own; after a paragraph break nothing is repeated, since a paragraph stands alone.
    """
    if size < 50:
        raise ValueError("chunk size must be at least 50 characters")
    if not 0 <= overlap < size // 2:
        raise ValueError("overlap must be between 0 and half the chunk size")
    n = len(text)
    paragraph_ends = [m.start() for m in _PARAGRAPH_BREAK.finditer(text)]
    sentence_ends = [m.end() for m in _SENTENCE_BREAK.finditer(text)]
    sentence_starts = sorted({_next_word(text, e) for e in sentence_ends})
    spaces = [m.span() for m in _WHITESPACE.finditer(text)]
    word_ends = [start for start, _ in spaces]
    word_starts = [end for _, end in spaces]

    passages: list[Passage] = []
    pos = _next_word(text, 0)
    while pos < n:
        limit = pos + size
        paragraph_end = False
        if limit >= n:
            end = n
        else:
            floor = pos + size // 2
            end = (_last_in(paragraph_ends, floor, limit) or 0)
            if end:
                paragraph_end = True
            else:
                end = _last_in(sentence_ends, floor, limit) or _last_in(word_ends, floor, limit) or limit
        piece = text[pos:end]
        stripped = piece.strip()
        if stripped:
            lead = len(piece) - len(piece.lstrip())
            start = pos + lead
            passages.append(Passage(stripped, base_offset + start, base_offset + start + len(stripped)))
        if end >= n:
            break
        following = _next_word(text, end)
        if paragraph_end or overlap == 0:
            pos = following
            continue
        target = end - overlap
        resume = _first_in(sentence_starts, target, end) or _first_in(word_starts, target, end) or following
        pos = resume if resume > pos else following
    return passages


def _next_word(text: str, index: int) -> int:
    n = len(text)
    while index < n and text[index].isspace():
        index += 1
    return index


def _last_in(points: list[int], low: int, high: int) -> int | None:
    """The largest point p with low < p <= high."""
    i = bisect.bisect_right(points, high) - 1
    if i >= 0 and points[i] > low:
        return points[i]
    return None


def _first_in(points: list[int], low: int, high: int) -> int | None:
    """The smallest point p with low <= p < high."""
    i = bisect.bisect_left(points, low)
    if i < len(points) and points[i] < high:
        return points[i]
    return None


# -- readers -----------------------------------------------------------------------------------


def read_document(path: Path, *, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Passage]:
    """The passages of one file. Raises DocumentError (or FileNotFoundError) with what was wrong."""
    suffix = path.suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise UnsupportedDocumentError(
            f"{path}: unsupported file type {suffix or '(no extension)'!r}; the knowledge store reads "
            f"{', '.join(SUPPORTED_SUFFIXES)}. Convert the file, or add its text with knowledge.add(text)."
        )
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.is_dir():
        raise DocumentError(f"{path} is a directory; pass a file, or use add_files([directory])")
    if suffix in PDF_SUFFIXES:
        passages = _read_pdf(path, size=size, overlap=overlap)
    else:
        text = _read_text(path)
        if suffix in MARKDOWN_SUFFIXES:
            passages = markdown_passages(text, size=size, overlap=overlap)
        elif suffix in JSON_SUFFIXES:
            passages = json_passages(text, size=size, where=str(path))
        elif suffix in CSV_SUFFIXES:
            passages = csv_passages(text, size=size, where=str(path), tab=suffix == ".tsv")
        else:
            passages = chunk_text(text.replace("\r\n", "\n"), size=size, overlap=overlap)
    if not passages:
        raise DocumentError(f"{path} has no text to add")
    for passage in passages:
        _check_storable(path, passage)
    return passages


def _check_storable(path: Path, passage: Passage) -> None:
    """The check `knowledge.add()` applies to text, for a file's text: a NUL (a binary file, or a
    JSON "\\u0000") or a lone surrogate (a JSON "\\ud800" with no pair) cannot be stored, and
    used to be stored or to fail inside the store with a message naming no file."""
    try:
        check_clean(passage.text, name="text")
    except ValueError:
        index = next(i for i, ch in enumerate(passage.text) if ch == "\x00" or 0xD800 <= ord(ch) <= 0xDFFF)
        char = passage.text[index]
        what = ("a NUL character (\\x00)" if char == "\x00"
                else f"a lone surrogate (\\u{ord(char):04x}, not valid Unicode)")
        where = f"page {passage.page}, " if passage.page is not None else ""
        section = f" ({passage.section})" if passage.section else ""
        raise DocumentError(
            f"{path} holds {what} at {where}character {passage.char_start + index} of its text{section}; "
            "fix the file (nothing of it was added)") from None


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DocumentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    if b"\x00" in raw[:8192]:
        raise DocumentError(f"{path} looks like a binary file, not {path.suffix} text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(
            f"{path} is not UTF-8 text (byte {exc.start} is invalid); re-save it as UTF-8"
        ) from exc
    if not text.strip():
        raise DocumentError(f"{path} is empty")
    return text


# Markdown: the markup goes, the words stay; headings become each passage's context.
_MD_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_MD_SETEXT = re.compile(r"^\s{0,3}(=+|-+)\s*$")
_MD_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_MD_RULE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_MD_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_MD_INLINE = (
    (re.compile(r"!\[([^\]]*)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\([^)]*\)"), r"\1"),
    (re.compile(r"\[([^\]]+)\]\[[^\]]*\]"), r"\1"),
    (re.compile(r"<[^>\n]+>"), ""),
    (re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"), r"\2"),
    (re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"), r"\1"),
    (re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"), r"\1"),
    (re.compile(r"~~(.+?)~~"), r"\1"),
    (re.compile(r"`([^`\n]*)`"), r"\1"),
)


def strip_markdown_line(line: str) -> str:
    line = re.sub(r"^\s{0,3}>\s?", "", line)
    line = re.sub(r"^(\s*)[*+]\s+", r"\1- ", line)
    if line.strip().startswith("|"):
        line = " | ".join(cell.strip() for cell in line.strip().strip("|").split("|"))
    for pattern, repl in _MD_INLINE:
        line = pattern.sub(repl, line)
    return line.rstrip()


def markdown_passages(text: str, *, size: int = CHUNK_CHARS, overlap: int = OVERLAP_CHARS) -> list[Passage]:
    lines = text.replace("\r\n", "\n").split("\n")
    if lines and lines[0].strip() == "---":  # YAML front matter is metadata, not content
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                lines = lines[i + 1:]
                break
    sections: list[tuple[list[str], list[str]]] = []  # (heading path, body lines)
    headings: list[tuple[int, str]] = []
    body: list[str] = []
    in_fence = False

    def close_section() -> None:
        if any(line.strip() for line in body):
            sections.append(([h for _, h in headings], list(body)))
        body.clear()

    def open_heading(level: int, title: str) -> None:
        close_section()
        while headings and headings[-1][0] >= level:
            headings.pop()
        if title:
            headings.append((level, title))

    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if _MD_FENCE.match(line):
            in_fence = not in_fence
            continue
        if in_fence:
            body.append(line.rstrip())
            continue
        heading = _MD_HEADING.match(line)
        if heading:
            open_heading(len(heading.group(1)), strip_markdown_line(heading.group(2)).strip())
            continue
        underline = _MD_SETEXT.match(lines[i]) if i < len(lines) else None
        if underline and line.strip() and not _MD_RULE.match(line) and not line.lstrip().startswith(("-", "*", "|")):
            open_heading(1 if underline.group(1).startswith("=") else 2, strip_markdown_line(line).strip())
            i += 1  # the underline
            continue
        if _MD_TABLE_RULE.match(line):
            continue  # the |---|---| under a table header
        if _MD_RULE.match(line):
            body.append("")
            continue
        body.append(strip_markdown_line(line))
    close_section()

    # The extracted text: each section's heading line, then its body.
    passages: list[Passage] = []
    offset = 0
    for path, section_lines in sections:
        context = " > ".join(path) if path else None
        header = (context + "\n") if context else ""
        section_body = "\n".join(section_lines).strip("\n")
        base = offset + len(header)
        for passage in chunk_text(section_body, size=max(50, size - len(header)), overlap=overlap,
                                  base_offset=base):
            text = f"{context}\n{passage.text}" if context else passage.text
            passages.append(replace(passage, text=text, section=context))
        offset = base + len(section_body) + 2
    return passages


def _scalar(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        cleaned = _WHITESPACE.sub(" ", value).strip()
        return cleaned or None
    return json.dumps(value, ensure_ascii=False)


def _flatten(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _flatten(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        if value and all(not isinstance(v, (dict, list)) for v in value):
            items = [s for s in (_scalar(v) for v in value) if s is not None]
            if items:
                yield f"{path}: {', '.join(items)}" if path else ", ".join(items)
            return
        for index, item in enumerate(value):
            yield from _flatten(item, f"{path}[{index}]")
    else:
        rendered = _scalar(value)
        if rendered is not None:
            yield f"{path}: {rendered}" if path else rendered


def json_passages(text: str, *, size: int = CHUNK_CHARS, where: str = "JSON") -> list[Passage]:
    """Flattened "key.path: value" lines. A list of records gives one passage per record (a FAQ
    entry, a product); the scalar fields of an object are packed together."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    blocks: list[tuple[str | None, list[str]]] = []
    if isinstance(data, list) and not all(not isinstance(v, (dict, list)) for v in data):
        for index, item in enumerate(data):
            blocks.append((f"[{index}]", list(_flatten(item, ""))))
    elif isinstance(data, dict):
        pooled: list[str] = []
        for key, value in data.items():
            if isinstance(value, list) and any(isinstance(v, (dict, list)) for v in value):
                for index, item in enumerate(value):
                    blocks.append((f"{key}[{index}]", list(_flatten(item, f"{key}[{index}]"))))
            else:
                pooled.extend(_flatten(value, str(key)))
        if pooled:
            blocks.insert(0, (None, pooled))
    else:
        blocks.append((None, list(_flatten(data, ""))))
    return _structured_passages(blocks, size=size)


def csv_passages(text: str, *, size: int = CHUNK_CHARS, where: str = "CSV", tab: bool = False) -> list[Passage]:
    """One passage per row, each value labelled with its column name."""
    sample = text[:8192]
    dialect: Any = csv.excel_tab if tab else csv.excel
    if not tab:
        try:
            dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
        except csv.Error:
            dialect = csv.excel
    try:
        rows = list(csv.reader(io.StringIO(text), dialect))
    except csv.Error as exc:
        raise DocumentError(f"{where} is not valid CSV: {exc}") from exc
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if len(rows) < 2:
        raise DocumentError(f"{where} needs a header row and at least one data row")
    header = [h.strip() or f"column {i + 1}" for i, h in enumerate(rows[0])]
    blocks: list[tuple[str | None, list[str]]] = []
    for number, row in enumerate(rows[1:], start=1):
        lines = []
        for i, cell in enumerate(row):
            value = _WHITESPACE.sub(" ", cell).strip()
            if value:
                name = header[i] if i < len(header) else f"column {i + 1}"
                lines.append(f"{name}: {value}")
        if lines:
            blocks.append((f"row {number}", lines))
    return _structured_passages(blocks, size=size)


def _structured_passages(blocks: list[tuple[str | None, list[str]]], *, size: int) -> list[Passage]:
    """Each block's lines as one passage, split at line ends only when a block is too long."""
    passages: list[Passage] = []
    offset = 0
    for section, lines in blocks:
        if not lines:
            continue
        body = "\n".join(lines)
        for passage in chunk_text(body, size=size, overlap=0, base_offset=offset):
            passages.append(replace(passage, section=section))
        offset += len(body) + 2
    return passages


def _read_pdf(path: Path, *, size: int, overlap: int) -> list[Passage]:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise ImportError(
            f"reading {path.name} needs pypdf, an optional extra: pip install 'mnemic[pdf]'"
        ) from None
    try:
        reader = PdfReader(str(path))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentError(f"{path} is password-protected; decrypt it first")
        pages = [(page.extract_text() or "").replace("\x00", "") for page in reader.pages]
    except DocumentError:
        raise
    except OSError as exc:
        raise DocumentError(f"{path} cannot be read: {exc.strerror or exc}") from exc
    except Exception as exc:  # pypdf raises PdfReadError and assorted parsing errors on bad files
        raise DocumentError(f"{path} is not a readable PDF: {exc}") from exc
    if not any(p.strip() for p in pages):
        raise DocumentError(
            f"{path} has no extractable text (a scanned PDF needs OCR first, e.g. ocrmypdf)"
        )
    starts: list[int] = []
    parts: list[str] = []
    offset = 0
    for page_text in pages:
        cleaned = page_text.replace("\r\n", "\n").strip()
        starts.append(offset)
        parts.append(cleaned)
        offset += len(cleaned) + 2
    document = "\n\n".join(parts)
    passages = chunk_text(document, size=size, overlap=overlap)
    return [replace(p, page=bisect.bisect_right(starts, p.char_start)) for p in passages]
