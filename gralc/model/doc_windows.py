"""One encoder window of a document as the model's input: what LoRA training encodes instead
of the whole document (Jina's / InSeNT's recipe, made cheap enough for a CPU).

A window ``[s, e)`` is one of the encoder's own sliding windows
(:func:`gralc.encoding.windows.plan_windows`); :func:`crop_features` cuts a document's
features to it (token rows re-indexed from 0, character offsets kept, so evidence spans and
chunk texts resolve as in the whole document), and :func:`evidence_window` picks the window
that holds a question's evidence most centrally. Inside a window the adapted encoder gives
exactly the vectors the whole-document pass gives there, up to the blending with neighbouring
windows in their overlaps.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import torch

from gralc.model.doc_features import DocFeatures


def crop_features(f: DocFeatures, start: int, end: int) -> DocFeatures:
    """``f`` restricted to token rows ``[start, end)``: H (end - start, d) and every per-token
    signal sliced, mention rows clipped to the window (those outside dropped), the concept
    graph kept whole. The whole document (``start=0, end=N``) comes back as ``f`` itself.

    Example: ``crop_features(f, 0, 512).H.shape[0]`` -> ``512`` (the first encoder window of a
    longer document; ``crop_features(f, 0, f.n_tokens) is f``).
    """
    n = f.n_tokens
    if not 0 <= start < end <= n:
        raise ValueError(f"document {f.doc_id!r}: window [{start}, {end}) outside [0, {n})")
    if start == 0 and end == n:
        return f
    te = f.token_entity
    keep = (te[0] >= start) & (te[0] < end)
    token_entity = torch.stack([te[0][keep] - start, te[1][keep]])
    mt = f.mention_tokens
    inside = (mt[:, 1] > start) & (mt[:, 0] < end) if len(mt) else torch.zeros(0, dtype=torch.bool, device=mt.device)
    rows = mt[inside].clone()
    if len(rows):
        rows[:, 0] = rows[:, 0].clamp(min=start) - start
        rows[:, 1] = rows[:, 1].clamp(max=end) - start
    return replace(
        f,
        H=f.H[start:end],
        offsets=f.offsets[start:end],
        b_struct=f.b_struct[start:end],
        b_sem=f.b_sem[start:end],
        entity_cross=f.entity_cross[start:end],
        word_start=f.word_start[start:end],
        token_entity=token_entity,
        mention_tokens=rows.reshape(-1, 3),
    )


def evidence_window(
    f: DocFeatures, char_ranges: list[tuple[int, int]], windows: list[tuple[int, int]]
) -> int:
    """Index into ``windows`` of the window holding the evidence ``char_ranges`` (the first
    range; characters of ``f.doc.text``) whole and nearest its centre; without evidence, or
    with evidence no token covers, the middle window.

    Example: ``evidence_window(f, [(1200, 1450)], [(0, 510), (382, 892)])`` -> the index of the
    window whose tokens hold characters 1200-1450 whole, nearest its centre.
    """
    if not char_ranges:
        return len(windows) // 2
    cs, ce = char_ranges[0]
    covered = ((f.offsets[:, 1] > cs) & (f.offsets[:, 0] < ce)).nonzero().flatten()
    if len(covered) == 0:
        return len(windows) // 2
    ts, te = int(covered[0]), int(covered[-1]) + 1
    mid = (ts + te) / 2

    def cost(k: int) -> tuple[int, float]:
        s, e = windows[k]
        return (0 if s <= ts and te <= e else 1, abs((s + e) / 2 - mid))

    return min(range(len(windows)), key=cost)


def lexical_window(
    question_ids: list[int], doc_ids: list[int], windows: list[tuple[int, int]], evidence: int
) -> int | None:
    """Index into ``windows`` of the window other than ``evidence`` whose tokens OUTSIDE the
    evidence window share the most of the question's word-pieces (``question_ids``; each
    distinct piece weighted by its idf ``log(n / df)`` over the document's n windows, so pieces
    in every window count 0): the lexically most confusable region of the same document, a hard
    negative window (BM25-style hard negatives, as DPR mines them). ``doc_ids``: the document's
    content-token ids. None when no other window shares a weighted piece.

    >>> lexical_window([7, 8], [7, 1, 2, 3, 8, 7, 8, 4], [(0, 2), (2, 4), (4, 6), (6, 8)], evidence=0)
    2
    """
    es, ee = windows[evidence]
    sets = [set(doc_ids[s:e]) for s, e in windows]
    df = Counter(t for ws in sets for t in ws)
    n = len(windows)
    wanted = {t: math.log(n / df[t]) for t in set(question_ids) if 0 < df[t] < n}
    best, best_score = None, 0.0
    for k, (s, e) in enumerate(windows):
        if k == evidence:
            continue
        outside = set(doc_ids[s:max(s, min(e, es))]) | set(doc_ids[max(s, ee):e])
        score = sum(w for t, w in wanted.items() if t in outside)
        if score > best_score:
            best, best_score = k, score
    return best


__all__ = ["crop_features", "evidence_window", "lexical_window"]
