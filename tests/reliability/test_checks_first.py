"""Every check before the expensive work (issue 58, class 8): ``eval models=[evil.ckpt]``
encoded the corpus and ran the baseline rows before refusing the model; two files with one
name in two folders were refused only after encoding both, by a message naming neither."""

from __future__ import annotations

import pickle

import pytest

from gralc.config import load_config
from gralc.evaluation.config import EvalConfig


class _RunsCode:
    def __reduce__(self):
        return (print, ("a crafted checkpoint ran code",))


def test_eval_refuses_a_bad_model_before_any_encoding(tmp_path, monkeypatch, capsys):
    import gralc.evaluation.run as run

    evil = tmp_path / "evil.ckpt"
    evil.write_bytes(pickle.dumps({"state_dict": _RunsCode()}))

    def no_pipeline(*args, **kwargs):
        raise AssertionError("the corpus was about to be encoded before the model was checked")

    monkeypatch.setattr(run, "Pipeline", no_pipeline)
    cfg = load_config(EvalConfig, None, [f"models=[{evil}]", "methods=[bm25]",
                                         f"paths.output_dir={tmp_path / 'out'}", "progress=false"])
    with pytest.raises(ValueError, match=f"models: gralc={evil}"):
        run.evaluate(cfg)
    assert "ran code" not in capsys.readouterr().out
    assert not (tmp_path / "out").exists()


def test_two_files_that_are_one_document_are_named_before_any_encoding(tmp_path, monkeypatch):
    from gralc import index as index_cli
    from gralc.documents.corpus import load_corpus

    corpus = tmp_path / "corpus"
    for sub, text in (("x", "Fever in mice is studied here."), ("y", "Cough in rats is studied here.")):
        (corpus / sub).mkdir(parents=True)
        (corpus / sub / "a.txt").write_text(f"# Title\n\n{text}\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"document 'a': .*x/a\.txt and .*y/a\.txt"):
        load_corpus(corpus)
    import gralc.pipeline

    def no_encoding(*args, **kwargs):
        raise AssertionError("encoded before the duplicate was found")

    monkeypatch.setattr(gralc.pipeline.Pipeline, "prepare", no_encoding)
    assert index_cli.main([str(corpus), "--out", str(tmp_path / "idx"), "--strategy", "late"]) == 2
