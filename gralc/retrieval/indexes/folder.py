"""What every index folder holds besides its index: chunk records as JSONL, its JSON files read
as untrusted (:func:`gralc.safe_load.read_json_untrusted`), and one message when a file is missing (the dense index, the BM25 index and the
trained model's chunk table all read and write through these)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gralc.atomic import atomic_write
from gralc.chunking.chunk import Chunk
from gralc.safe_load import parse_json, read_json_untrusted


def write_chunks(path: Path, chunks: Sequence[Chunk]) -> None:
    """Chunk metadata as JSONL (no embeddings), written atomically.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chunks.jsonl"; write_chunks(f, [Chunk("d1", "c0", "x", 0, 1)])
    >>> f.read_text().count("\\n")
    1
    """
    with atomic_write(path) as f:
        for c in chunks:
            f.write(json.dumps(c.to_dict(with_embedding=False), ensure_ascii=False) + "\n")


def read_chunks(path: Path) -> list[Chunk]:
    """Inverse of :func:`write_chunks`; errors name the file and line.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chunks.jsonl"; write_chunks(f, [Chunk("d1", "c0", "x", 0, 1)])
    >>> read_chunks(f)[0].chunk_id
    'c0'
    """
    require(path)
    chunks = []
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            record = parse_json(line, path, line_no, "; rebuild the index")
            try:
                chunks.append(Chunk.from_dict(record))
            except (ValueError, TypeError) as e:
                raise ValueError(f"{path}:{line_no}: corrupt chunk record ({e})") from e
    return chunks


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object of an index folder (:func:`gralc.safe_load.read_json_untrusted`), the
    message of :func:`require` when it is missing.

    >>> import pathlib, tempfile
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "config.json"; _ = f.write_text('{"dim": 384}')
    >>> read_json(f)
    {'dim': 384}
    """
    require(path)
    return read_json_untrusted(path, expect=dict)


def require(path: Path) -> None:
    """FileNotFoundError (rebuild the index) unless ``path`` is a file.

    >>> import tempfile
    >>> require(Path(tempfile.mkdtemp()) / "index.faiss")
    Traceback (most recent call last):
    ...
    FileNotFoundError: ...
    """
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: the index directory is incomplete, rebuild it")
