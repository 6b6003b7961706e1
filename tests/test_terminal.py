"""The one terminal sanitiser (issue 58, class 6): corpus text printed for a person (search
hits, the inspect report, the chunk table) shows control sequences as escapes and never sends
them to the terminal; JSON output stays exact."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from gralc.chunking.chunk import Chunk
from gralc.retrieval.hits import Hit
from gralc.terminal import for_terminal

ATTACKS = ["\x1b[2J", "\x1b]0;owned\x07", "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\", "\u009b31m",
           "\u009d0;title\u009c", "\r", "\u202e", "\x7f"]
#: what a terminal acts on: C0 controls but tab and newline, DEL, C1, bidi overrides / isolates
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_nothing_a_terminal_acts_on_survives(text):
    out = for_terminal(text)
    assert not UNSAFE.search(out)
    out.encode("utf-8")  # no unpaired surrogate either
    if not UNSAFE.search(text) and not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert out == text  # ordinary text is printed as it is


def _chunk(text: str) -> Chunk:
    return Chunk("PMC1\x1b[31m", "c0", text, 0, len(text), section_path=["Results\u202e", "Table\x9b"])


def test_search_hits_printed_as_text_carry_no_control_sequence(capsys):
    from gralc.search import hit_record, print_text

    text = "fever in mice " + "".join(ATTACKS)
    print_text([Hit(_chunk(text), 0.5, {"cos": 0.5})])
    out = capsys.readouterr().out
    assert not UNSAFE.search(out.replace("\n", "")) and "\\x1b[2J" in out and "\\u202e" in out
    record = json.loads(json.dumps(hit_record(1, Hit(_chunk(text), 0.5, {"cos": 0.5}))))
    assert record["text"] == text  # JSON output stays exact


def test_the_inspect_report_escapes_a_hostile_title(tmp_path, capsys):
    from gralc.documents.__main__ import main

    article = tmp_path / "a.md"
    article.write_text("# Title \x1b[2J\x1b]0;owned\x07\n\n## Methods\n\nWe studied mice \u009b31m here.\n",
                       encoding="utf-8")
    assert main(["inspect", str(article)]) == 0
    out = capsys.readouterr().out
    assert not UNSAFE.search(out.replace("\n", "")) and "\\x1b[2J" in out


def test_the_chunk_table_escapes_and_reads_no_markup(capsys):
    from gralc.chunk import print_table
    from gralc.documents.model import Document

    chunk = _chunk("text")
    chunk.section_path = ["[bold red]Results[/]\x1b[2J"]
    print_table(Document(id="PMC1\x1b]0;x\x07", text="text"), [chunk], {})
    out = capsys.readouterr().out
    assert not UNSAFE.search(out.replace("\n", "")) and "[bold red]Results" in out.replace("\n", "")


def test_errors_and_warnings_reach_the_terminal_escaped(tmp_path, capsys):
    """The error boundary and the log lines of every command: a hostile file name is shown,
    never acted on."""
    from gralc import index as index_cli

    hostile = tmp_path / "corpus\x1b[2J\x1b]0;owned\x07"
    assert index_cli.main([str(hostile), "--out", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert "\\x1b[2J" in err and not UNSAFE.search(err.replace("\n", ""))
