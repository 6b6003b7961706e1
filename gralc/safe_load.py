"""Read files GraLC did not necessarily write, without running code from them.

:func:`load_torch`: ``torch.load(weights_only=True)`` only rebuilds tensors, plain containers and
numbers (and the GraLC record classes a caller allows by name); anything else is refused with an
error naming it. :func:`read_json_untrusted` is the one JSON reader (UTF-8 checked, errors name
the file and line, ``${...}`` interpolations refused), :func:`read_yaml_untrusted` its YAML twin,
:func:`path_inside` keeps a path read from a file inside its folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def load_torch(path: str | Path, allowed: Sequence[type] = (), what: str = "file") -> Any:
    """``torch.load(path, map_location="cpu", weights_only=True)`` with ``allowed`` classes;
    FileNotFoundError / ValueError naming ``path`` and the fix otherwise.

    >>> import tempfile, torch; f = Path(tempfile.mkdtemp()) / "t.pt"; torch.save({"w": torch.ones(2)}, f)
    >>> load_torch(f, what="weights")["w"]
    tensor([1., 1.])
    """
    import torch

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    require_file(path, what)
    try:
        with torch.serialization.safe_globals(list(allowed)):
            return torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        lines = [ln.strip() for ln in str(exc).splitlines() if "Unsupported" in ln]
        reason = lines[0][:200] if lines else "objects other than weights"
        raise ValueError(
            f"refusing to load {path}: it asks for Python objects other than weights ({reason}); "
            f"GraLC never unpickles code from a file, pass a {what} written by GraLC"
        ) from None
    except (RuntimeError, EOFError, OSError) as exc:
        raise ValueError(f"{path}: not a readable torch {what} ({exc}); it may be truncated: "
                         "write it again") from None


# ----- JSON / YAML from files GraLC did not necessarily write -------------------------------
def no_interpolation(value: Any, source: str, key: str = "") -> None:
    """Refuse OmegaConf interpolations (``${oc.env:API_KEY}``, ``${...}``) anywhere in data
    read from a file: resolving them would copy the environment or other keys into GraLC's
    outputs. Iterative, so any depth is fine.

    >>> no_interpolation({"k": ["plain"]}, "a.json") is None
    True
    """
    stack = [(key, value)]
    while stack:
        at, v = stack.pop()
        if isinstance(v, dict):
            stack.extend((f"{at}.{k}" if at else str(k), x) for k, x in v.items())
            stack.extend((f"{at} (a key)", k) for k in v if isinstance(k, str))
        elif isinstance(v, list):
            stack.extend((f"{at}[{i}]", x) for i, x in enumerate(v))
        elif isinstance(v, str) and "${" in v:
            raise ValueError(f"{source}: {at or 'the value'} holds an interpolation ({v[:60]!r}); "
                             "GraLC never resolves ${...} in a file it reads (it could copy "
                             "environment variables out): write the plain value")


def _error(error: type[ValueError], message: str, path: str | Path, line: int | None = None) -> ValueError:
    """``error(message)``, with ``path`` and ``line`` for an error class that records them."""
    return ValueError(message) if error is ValueError else error(message, path=path, line=line)


def decode_utf8(data: bytes, name: str | Path, what: str = "UTF-8",
                error: type[ValueError] = ValueError) -> str:
    """``data`` as UTF-8 text (a leading BOM dropped), or one ``error`` naming the line and the
    fix (``what``: how the message calls the expected content, e.g. ``a UTF-8 JSON file``).

    >>> decode_utf8(b"\\xef\\xbb\\xbfok", "a.txt")
    'ok'
    """
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
        if "\x00" not in text or guess_encoding(data).startswith("latin1"):
            return text
        # mostly-ASCII UTF-16 / UTF-32 without a byte-order mark decodes as UTF-8 with NULs
        raise UnicodeDecodeError("utf-8", data, data.index(0), data.index(0) + 1, "NUL byte")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        path = Path(name)
        source = guess_encoding(data)
        raise _error(error, f"{name}:{line}: not {what} (byte 0x{data[exc.start]:02x} at byte offset "
                            f"{exc.start}{f'; it looks like {source}' if source != 'latin1' else ''}); "
                            f"re-save it as UTF-8, e.g. iconv -f {source} -t utf-8 {path.name} > "
                            f"fixed{path.suffix}", name, line) from None


def guess_encoding(data: bytes) -> str:
    """The encoding ``iconv -f`` should read ``data`` (which is not UTF-8) with: UTF-32 or UTF-16
    by their byte-order mark or by NUL bytes in every other (or every fourth) position, else
    ``latin1`` (Windows' and old Unix tools' usual single-byte text).

    >>> guess_encoding("café".encode("utf-16")), guess_encoding("café".encode("latin1"))
    ('UTF-16', 'latin1')
    """
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        return "UTF-32"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16"
    head = data[:4096]
    zeros = head.count(0)
    if len(head) >= 8 and zeros >= 0.65 * len(head):  # mostly-ASCII UTF-32: 3 NULs a character
        return "UTF-32LE" if head[0] else "UTF-32BE"
    if len(head) >= 8 and zeros >= len(head) // 4:  # mostly-ASCII UTF-16: 1 NUL a character
        return "UTF-16LE" if head[1::2].count(0) > head[0::2].count(0) else "UTF-16BE"
    return "latin1"


def parse_json(text: str, name: str | Path, line: int | None = None, hint: str = "",
               error: type[ValueError] = ValueError) -> Any:
    """``json.loads(text)``; a syntax error or too deep a nesting is one ``error`` naming
    ``name`` (and ``line``: the line of a JSON Lines record), ``hint`` appended (the fix).

    >>> parse_json('{"a": 1}', "a.json")
    {'a': 1}
    """
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        at = line if line is not None else exc.lineno
        raise _error(error, f"{name}:{at}: not valid JSON ({exc.msg}, column {exc.colno}){hint}",
                     name, at) from None
    except RecursionError:
        where = f"{name}:{line}" if line is not None else str(name)
        raise _error(error, f"{where}: JSON nested too deeply to read (deeper than Python's JSON "
                            f"reader recurses); no real data file nests so deep{hint}", name, line) from None


#: the largest file GraLC reads whole (a JSON, YAML or question file), in MB
#: (``GRALC_MAX_FILE_MB``): parsed, such a file takes several times its size in memory, so one
#: huge or hostile file cannot take the machine; corpora are read an article at a time instead
MAX_FILE_MB = 512.0


def max_file_bytes() -> int:
    """:data:`MAX_FILE_MB` in bytes, or ``GRALC_MAX_FILE_MB`` when set.

    >>> max_file_bytes() >= 1_000_000
    True
    """
    return env_megabytes("GRALC_MAX_FILE_MB", MAX_FILE_MB)


def env_megabytes(name: str, default: float) -> int:
    """The bytes an environment variable ``name`` sets in megabytes (``default`` unset); a
    value that is not a number is one ValueError naming it.

    >>> env_megabytes("GRALC_UNSET_BOUND_MB", 2.5)
    2500000
    """
    try:
        mb = float(os.environ.get(name, default))
    except ValueError:
        raise ValueError(f"{name}={os.environ[name]!r}: give a number of megabytes, e.g. 32") from None
    return int(mb * 1_000_000)


def check_file_size(path: str | Path, error: type[ValueError] = ValueError) -> None:
    """One ``error`` naming ``path`` when it is larger than :func:`max_file_bytes`, said before
    anything reads it (a missing file passes: its reader says so).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "q.tsv"; _ = f.write_text("1\\tWhich dose?")
    >>> check_file_size(f) is None
    True
    """
    try:
        size = Path(path).stat().st_size
    except OSError:
        return
    limit = max_file_bytes()
    if size > limit:
        raise _error(error, f"{path} is {size / 1e6:.4g} MB, more than the {limit / 1e6:g} MB GraLC "
                            "reads whole (parsed, a file takes several times its size in memory); "
                            "split it, or raise the limit with GRALC_MAX_FILE_MB", path)


def json_int(value: Any, where: str, minimum: int | None = None) -> int:
    """``value`` when it is a JSON integer (not a bool, not a float: ``1e999`` reads as infinity,
    which ``int()`` cannot hold), at least ``minimum``; else one ValueError naming ``where``.

    >>> json_int(384, "tokens.json: dim", minimum=1)
    384
    """
    if not isinstance(value, int) or isinstance(value, bool) or (minimum is not None and value < minimum):
        least = f" >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{where}: expected an integer{least}, got {value!r}")
    return value


def require_file(path: str | Path, what: str = "file") -> Path:
    """``path`` when it is a regular file (or a link to one): a FileNotFoundError "``what`` not
    found" when nothing is there, one ValueError saying what stands there instead (a folder; a
    pipe, socket or device, which would block or never end) otherwise.

    >>> import tempfile; d = Path(tempfile.mkdtemp())
    >>> try: require_file(d, "question file")
    ... except ValueError as exc: print(str(exc).split(": ", 1)[0].endswith("is a folder, not a question file"))
    True
    """
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        raise FileNotFoundError(f"{what} not found: {path}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}; check the path and permissions") from None
    if stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{path} is a folder, not a {what}: give a file")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{path} is not a regular file (a pipe, socket or device, which would block "
                         f"or never end): give a {what} stored on disk")
    return path


def _read_text(path: str | Path, what: str, kind: str, error: type[ValueError]) -> str:
    """The UTF-8 text of ``path``: FileNotFoundError when it is missing, else one ``error``
    naming it (unreadable, larger than :func:`max_file_bytes`, not UTF-8)."""
    path = require_file(path, what)
    check_file_size(path, error)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _error(error, f"cannot read {path}: {exc.strerror}; check the path and permissions",
                     path) from None
    return decode_utf8(data, path, f"a UTF-8 {kind} file", error)


def read_json_untrusted(path: str | Path, what: str = "JSON file", hint: str = "",
                        allow_interpolation: bool = False, error: type[ValueError] = ValueError,
                        expect: type | None = None) -> Any:
    """The one reader of a JSON file GraLC did not necessarily write: a missing file is a
    FileNotFoundError, bytes that are not UTF-8, a syntax error or too deep a nesting one
    ``error`` naming the file (and line; ``hint`` appended); ``${...}`` interpolations are
    refused unless ``allow_interpolation`` (data that never reaches OmegaConf, e.g. document
    text); ``expect``: the type the top level must have (``dict``: a JSON object).

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "a.json"; _ = f.write_text('{"k": [1]}')
    >>> read_json_untrusted(f, expect=dict)
    {'k': [1]}
    """
    data = parse_json(_read_text(path, what, "JSON", error), path, hint=hint, error=error)
    if not allow_interpolation:
        no_interpolation(data, str(path))
    if expect is not None and not isinstance(data, expect):
        kind = "a JSON object" if expect is dict else f"JSON of type {expect.__name__}"
        raise _error(error, f"{path}: expected {kind}, found {type(data).__name__}; rebuild it", path)
    return data


def _no_aliases(yaml, text: str, path: Path) -> None:
    """ValueError at the first YAML alias (``*name``): each one may stand for a whole nested
    value, so a few hundred bytes of aliases expand to billions of items (a "billion laughs"
    file) in whoever walks the result; no GraLC file needs them."""
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            line = event.start_mark.line + 1 if event.start_mark else "?"
            raise ValueError(f"{path}:{line}: a YAML alias (*{event.anchor}); GraLC does not read aliases in "
                             "a file it did not write (a few can expand to billions of values): write "
                             "the values out")


def read_yaml_untrusted(path: str | Path, what: str = "YAML file", allow_interpolation: bool = False) -> Any:
    """``yaml.safe_load`` of ``path`` (no Python tags), read as untrusted: errors name the file;
    interpolations (:func:`no_interpolation`) and aliases (:func:`_no_aliases`) are refused.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "c.yaml"; _ = f.write_text("k: [1, 2]\\n")
    >>> read_yaml_untrusted(f)
    {'k': [1, 2]}
    """
    import yaml

    path = Path(path)
    text = _read_text(path, what, "YAML", ValueError)
    try:
        _no_aliases(yaml, text, path)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise ValueError(f"{path}: YAML nested too deeply to be a GraLC file") from None
    if not allow_interpolation:
        no_interpolation(data, str(path))
    return data


def path_inside(root: str | Path, rel: Any, source: str) -> Path:
    """``root / rel`` for a path ``rel`` read from the file ``source``, refused (ValueError
    naming both) unless it is a relative path that resolves inside ``root`` (no ``..``, no
    absolute path, no symbolic link leading out).

    >>> path_inside("/idx", "lexical/chunks.jsonl", "/idx/manifest.json")
    PosixPath('/idx/lexical/chunks.jsonl')
    """
    if not isinstance(rel, str) or not rel or "\x00" in rel:
        raise ValueError(f"{source}: {rel!r} is not a path (a relative path inside {root} is expected)")
    base = Path(root).resolve()
    target = (base / rel).resolve()
    if Path(rel).is_absolute() or (target != base and base not in target.parents):
        raise ValueError(f"{source}: the path {rel!r} leads outside {base}; a GraLC file may only "
                         "name files inside its own folder: rebuild it")
    return target


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of the file at ``path``, read in 1 MiB blocks.

    >>> import tempfile; f = Path(tempfile.mkdtemp()) / "a.txt"; _ = f.write_text("")
    >>> file_sha256(f)[:12]
    'e3b0c44298fc'
    """
    require_file(path, "file")  # a pipe or device would block or never end
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
