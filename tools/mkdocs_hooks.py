"""MkDocs hook (mkdocs.yml ``hooks:``): links to repository files outside ``docs/``.

The pages are also read on GitHub, where ``[CHANGELOG.md](CHANGELOG.md)`` in the README (the
site's home page) or ``[slurm/README.md](../slurm/README.md)`` in docs/training.md work; the
site only serves ``docs/``, so MkDocs reports them as broken, and it has no setting for links
that leave the docs folder other than silencing every broken link. So, in the site only, a
link whose target is an existing repository file or folder outside ``docs/`` becomes that
file's repository path as a code span; a link to a missing file is left alone, and
``mkdocs build --strict`` still fails on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

# [text](../path) or [text](../path#anchor), after include-markdown rewrote the README's links
LINK = re.compile(r"\[([^\]\n]+)\]\((\.\./[^)\s#]*)(#[^)\s]*)?\)")


def on_page_markdown(markdown: str, page: Any, config: Any, **kwargs: Any) -> str:
    docs = Path(config["docs_dir"]).resolve()
    repo = Path(config["config_file_path"]).resolve().parent
    here = (docs / page.file.src_uri).parent

    def outside(m: re.Match[str]) -> str:
        target = (here / m[2]).resolve()
        if not target.exists() or not target.is_relative_to(repo) or target.is_relative_to(docs):
            return m[0]
        path = target.relative_to(repo).as_posix()
        text = m[1].strip("`")
        return f"`{path}`" if text == path else f"{m[1]} (`{path}`)"

    return LINK.sub(outside, markdown)
