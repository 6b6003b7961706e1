"""Download NLM's MeSH files (descriptor XML and tree file) for a given year.

Files: ``descYYYY.xml`` (about 300 MB) and ``mtreesYYYY.bin``, from NLM's public server:
the current year lives in ``MESH_FILES/``, every year in ``YYYY/`` (possibly gzipped).
Writes are atomic (:mod:`gralc.atomic`: a temporary file, then a rename); files already
present are kept. ``base_url`` may point to a mirror (``https://...`` or a local ``file://`` copy of NLM's folder layout).
"""

from __future__ import annotations

import gzip
import shutil
import urllib.error
import urllib.request
from pathlib import Path

from gralc.atomic import atomic_write

MESH_BASE_URL = "https://nlmpubs.nlm.nih.gov/projects/mesh"


class OfflineError(ConnectionError):
    """The MeSH server could not be reached.

    Example: ``download_mesh(2024, "data/mesh")`` without a network -> ``OfflineError`` naming the
    server and the manual download.
    """


def mesh_file_urls(year: int, base_url: str = MESH_BASE_URL) -> dict[str, list[str]]:
    """Candidate URLs per output file name, tried in order.

    >>> sorted(mesh_file_urls(2024))
    ['desc2024.xml', 'mtrees2024.bin']
    """
    base = base_url.rstrip("/")
    desc, trees = f"desc{year}", f"mtrees{year}"
    return {
        f"{desc}.xml": [
            f"{base}/MESH_FILES/xmlmesh/{desc}.xml",
            f"{base}/{year}/xmlmesh/{desc}.xml",
            f"{base}/MESH_FILES/xmlmesh/{desc}.gz",
            f"{base}/{year}/xmlmesh/{desc}.gz",
        ],
        f"{trees}.bin": [
            f"{base}/MESH_FILES/meshtrees/{trees}.bin",
            f"{base}/{year}/meshtrees/{trees}.bin",
        ],
    }


def _fetch(url: str, dest: Path, timeout: float) -> None:
    with urllib.request.urlopen(url, timeout=timeout) as response, atomic_write(dest, "wb") as out:
        source = gzip.GzipFile(fileobj=response) if url.endswith(".gz") else response
        shutil.copyfileobj(source, out, length=1 << 20)


def download_mesh(
    year: int,
    out_dir: str | Path,
    base_url: str = MESH_BASE_URL,
    timeout: float = 60.0,
    force: bool = False,
) -> list[Path]:
    """Download ``descYEAR.xml`` and ``mtreesYEAR.bin`` into ``out_dir``; returns their paths.

    Raises :class:`OfflineError` when the server is unreachable and ``FileNotFoundError``
    when no candidate URL has the file (wrong year).

    Example: ``[p.name for p in download_mesh(2024, "data/mesh")]`` -> ``['desc2024.xml',
    'mtrees2024.bin']``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, urls in mesh_file_urls(year, base_url).items():
        dest = out_dir / name
        paths.append(dest)
        if dest.is_file() and not force:
            continue
        for url in urls:
            try:
                _fetch(url, dest, timeout)
                break
            except urllib.error.HTTPError as err:
                if err.code != 404:
                    raise OfflineError(f"{url}: HTTP {err.code} {err.reason}") from err
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                if isinstance(getattr(err, "reason", None), FileNotFoundError):
                    continue  # a file:// mirror without this candidate: try the next
                raise OfflineError(
                    f"no network: could not reach {url} ({getattr(err, 'reason', err)}). "
                    f"Download {name} on a connected machine (from {urls[0]}), copy it to "
                    f"{out_dir}, or set knowledge.vocabulary=PATH to use a vocabulary file you have"
                ) from err
        else:
            raise FileNotFoundError(
                f"{name} not found for MeSH year {year}; tried: " + ", ".join(urls)
            )
    return paths
