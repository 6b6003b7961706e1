"""Helpers for the structure-aware chunking tests: hand-built Documents and token embeddings
(real MiniLM via transformers, or one token per whitespace word with given vectors)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch

from gralc.documents.model import Document, Paragraph, Section, Sentence, TextBuilder
from gralc.encoding.types import TokenEmbeddings


@dataclass
class Sec:
    """Section spec: ``paragraphs`` are texts or ``(kind, text)``; title "" = untitled."""

    title: str
    imrad_type: str = "other"
    paragraphs: list = field(default_factory=list)
    subsections: list[Sec] = field(default_factory=list)


def _sentences(text: str, start: int, par_id: str) -> list[Sentence]:
    return [
        Sentence(start + m.start(), start + m.end(), par_id)
        for m in re.finditer(r"\S.*?(?:[.!?](?=\s|$)|$)", text)
    ]


def build_document(doc_id: str, title: str, sections: list[Sec]) -> Document:
    """A Document laid out like the parsers do (title, section titles and paragraphs as
    blocks), with sentences split at ``. `` and list items for ``("list_item", text)``."""
    b = TextBuilder()
    paragraphs: list[Paragraph] = []
    ids = itertools.count(1)
    t0, t1 = b.add(title) if title else (0, 0)

    def add(spec: Sec, level: int, parent: str | None) -> Section:
        sid = f"sec{next(ids)}"
        first = b.length + (len(b.SEPARATOR) if b.length else 0)
        ts, te = b.add(spec.title) if spec.title else (first, first)
        sec = Section(sid, spec.title, level, spec.imrad_type, first, first, ts, te, parent)
        for p in spec.paragraphs:
            kind, text = p if isinstance(p, tuple) else ("paragraph", p)
            ps, pe = b.add(text)
            pid = f"p{len(paragraphs) + 1}"
            paragraphs.append(
                Paragraph(pid, ps, pe, sid, kind, sentences=_sentences(text, ps, pid))
            )
            sec.paragraph_ids.append(pid)
        sec.subsections = [add(sub, level + 1, sid) for sub in spec.subsections]
        sec.end = b.length
        return sec

    secs = [add(s, 1, None) for s in sections]
    return Document(doc_id, b.text, title, t0, t1, sections=secs, paragraphs=paragraphs)


def word_tokens(text: str, vectors: torch.Tensor | None = None, dim: int = 4) -> TokenEmbeddings:
    """One token per whitespace-separated word (exact offsets), with given or random vectors."""
    offsets = np.array([[m.start(), m.end()] for m in re.finditer(r"\S+", text)], dtype=np.int64)
    if vectors is None:
        vectors = torch.randn(len(offsets), dim, generator=torch.Generator().manual_seed(0))
    return TokenEmbeddings(vectors.float(), offsets.reshape(-1, 2), "words", [(0, len(offsets))])


@lru_cache(maxsize=2)
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)


@lru_cache(maxsize=2)
def _model(path: str):
    from transformers import AutoModel

    return AutoModel.from_pretrained(path).eval()


def minilm_offsets(text: str, model_path: Path) -> np.ndarray:
    """(N, 2) MiniLM word-piece character offsets of ``text`` (tokenizer only)."""
    tok = _tokenizer(str(model_path))
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    return np.array(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)


def minilm_tokens(text: str, model_path: Path, window: int = 510) -> TokenEmbeddings:
    """Contextual MiniLM token vectors of ``text`` (no [CLS]/[SEP]), non-overlapping windows."""
    tok, model = _tokenizer(str(model_path)), _model(str(model_path))
    enc = tok(text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], np.array(enc["offset_mapping"], dtype=np.int64)
    rows, windows = [], []
    with torch.no_grad():
        for s in range(0, len(ids), window):
            chunk = [tok.cls_token_id, *ids[s : s + window], tok.sep_token_id]
            out = model(input_ids=torch.tensor([chunk])).last_hidden_state[0, 1:-1]
            rows.append(out)
            windows.append((s, s + len(chunk) - 2))
    return TokenEmbeddings(torch.cat(rows), offsets.reshape(-1, 2), "all-MiniLM-L6-v2", windows)


# ----- a PubMedQA-like abstract -----------------------------------------------------------
ABSTRACT = [
    Sec(
        "BACKGROUND",
        "introduction",
        [
            "Glioblastoma is the most common malignant primary brain tumour in adults. Despite "
            "surgery, radiotherapy and temozolomide, median survival remains close to fifteen "
            "months. Tumour-treating fields are an antimitotic therapy delivered through "
            "transducer arrays placed on the scalp. Their benefit in older patients and their "
            "effect on quality of life remain uncertain, and adherence varies widely between "
            "centres. We asked whether tumour-treating fields prolong survival in elderly patients."
        ],
    ),
    Sec(
        "METHODS",
        "methods",
        [
            "We conducted a retrospective cohort study of 412 patients aged 65 years or older "
            "treated between 2012 and 2019 at three university hospitals. Data were extracted "
            "from electronic records by two independent reviewers. Overall survival was estimated "
            "with the Kaplan-Meier method and compared with Cox proportional hazards models "
            "adjusted for age, performance status, extent of resection and MGMT promoter "
            "methylation. Statistical significance was set at a two-sided p value below 0.05."
        ],
    ),
    Sec(
        "RESULTS",
        "results",
        [
            "Of the 412 patients, 133 received tumour-treating fields. Median overall survival "
            "was 17.2 months with the device and 12.9 months without it (hazard ratio 0.71, 95% "
            "confidence interval 0.56 to 0.90). The benefit was consistent across subgroups "
            "defined by methylation status. Skin toxicity of grade 1 or 2 occurred in 38% of "
            "treated patients, and no grade 4 events were recorded. Daily usage above 75% was "
            "associated with longer survival."
        ],
    ),
    Sec(
        "CONCLUSIONS",
        "conclusion",
        [
            "In elderly patients with newly diagnosed glioblastoma, tumour-treating fields were "
            "associated with longer overall survival and acceptable skin toxicity. Prospective "
            "trials in this age group are warranted before routine use can be recommended, and "
            "cost-effectiveness should be examined in parallel."
        ],
    ),
]


def pubmedqa_like() -> Document:
    """A ~400-token abstract whose sections are its context labels (no title block)."""
    return build_document("pqa-like", "", ABSTRACT)


def three_section_doc() -> Document:
    """A small article: title, Introduction, Methods (+ a subsection), Results (2 paragraphs)."""
    bg, methods, results, concl = (s.paragraphs[0] for s in ABSTRACT)
    return build_document(
        "three-sec",
        "Tumour-treating fields in elderly glioblastoma",
        [
            Sec("1. Introduction", "introduction", [bg]),
            Sec(
                "2. Methods",
                "methods",
                [methods],
                [
                    Sec(
                        "2.1 Statistical analysis",
                        "methods",
                        [
                            "Hazard ratios are reported with 95% confidence intervals. Missing covariates "
                            "were imputed by chained equations with twenty imputations, and sensitivity "
                            "analyses were restricted to complete cases."
                        ],
                    ),
                ],
            ),
            Sec("3. Results", "results", [results, concl]),
        ],
    )
