"""Which precision the encoder runs in: ``fp32``, ``bf16`` (torch.autocast) or ``auto``.

``auto`` picks bf16 only where the hardware computes it natively *and* faster: a CUDA device
that supports bf16; a CPU whose flags include ``avx512_bf16`` or ``amx_bf16`` *and* on which
a probe (:func:`bf16_speedup`: the encoder's feed-forward matmul in both precisions) runs
bf16 at least :data:`BF16_MIN_SPEEDUP` x faster. The flags alone do not decide: bf16 autocast
was ~2.5x faster on an AVX512-BF16 EPYC and an AMX Xeon, but 0.73x on a 2-core
``avx512_bf16`` Xeon without AMX (full-document encoding, 3,881 vs 5,292 tokens/s; issue 57).
The probe's answer is kept per machine (CPU model, flags, torch version, threads) in
``$GRALC_CACHE/precision.json``. A CPU without those flags runs fp32 (bf16 is emulated there,
~5x slower) and is never probed. The choice is logged, with the reason.
"""

from __future__ import annotations

import logging
import time
from functools import lru_cache
from pathlib import Path

import torch

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16", "auto")
#: CPU flags (``/proc/cpuinfo``) of native bf16 arithmetic.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")
#: bf16 must beat fp32 by this factor in :func:`bf16_speedup` to be chosen by ``auto`` (fp32
#: is the exact one: a tie or a noisy near-tie keeps it).
BF16_MIN_SPEEDUP = 1.15
#: the probe's matmul: a 512-piece window through the feed-forward layer of a 384-wide
#: encoder (MiniLM-L6, e5-small), where the encoder spends most of its time.
PROBE_SHAPE = (512, 384, 1536)


@lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, frozenset[str]]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "", frozenset()
    model, flags = "", frozenset()
    for line in text.splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        elif line.startswith(("flags", "Features")) and not flags:
            flags = frozenset(line.split(":", 1)[1].split())
    return model, flags


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none).

    >>> isinstance(cpu_flags(), frozenset)
    True
    """
    return _cpuinfo()[1]


def native_bf16(device: torch.device) -> tuple[bool, str]:
    """``(has native bf16, why)`` for ``device``: whether bf16 *can* be fast there (flags);
    whether it *is* is :func:`resolve_precision`'s measured question.

    Example: ``native_bf16(torch.device("cpu"))`` -> ``(True, 'CPU flags avx512_bf16')`` on a
    CPU with AVX-512 BF16, ``(False, ...)`` with the reason otherwise.
    """
    if device.type == "cuda":
        ok = torch.cuda.is_bf16_supported()
        return ok, f"CUDA device {'supports' if ok else 'lacks'} bf16"
    found = sorted(set(NATIVE_BF16_FLAGS) & cpu_flags())
    if found:
        return True, f"CPU flags {', '.join(found)}"
    return False, f"CPU without {' / '.join(NATIVE_BF16_FLAGS)} (bf16 would be emulated, ~5x slower)"


def _seconds(fn, reps: int) -> float:
    t = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t) / reps


def probe_bf16_speedup(shape: tuple[int, int, int] = PROBE_SHAPE, reps: int = 5,
                       rounds: int = 3) -> float:
    """fp32 seconds / bf16-autocast seconds of one CPU matmul of ``shape`` (rows, in, out),
    the two interleaved ``rounds`` times, best of each (a busy neighbour slows both alike).

    >>> probe_bf16_speedup((8, 8, 8), reps=1, rounds=1) > 0
    True
    """
    n, k, m = shape
    gen = torch.Generator().manual_seed(0)
    x, layer = torch.randn(n, k, generator=gen), torch.nn.Linear(k, m)

    def run(bf16: bool) -> None:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            layer(x)

    run(False), run(True)  # warm-up: first calls pick kernels
    fp32 = bf16 = float("inf")
    for _ in range(rounds):
        fp32 = min(fp32, _seconds(lambda: run(False), reps))
        bf16 = min(bf16, _seconds(lambda: run(True), reps))
    return fp32 / bf16


def machine_key() -> str:
    """What the probe's answer depends on: CPU model, bf16 flags, torch version, threads.

    >>> "torch" in machine_key()
    True
    """
    model, flags = _cpuinfo()
    found = ",".join(sorted(set(NATIVE_BF16_FLAGS) & flags)) or "none"
    return f"{model or 'unknown CPU'} | {found} | torch {torch.__version__} | {torch.get_num_threads()} threads"


def _cache_file() -> Path:
    from gralc.encoding.models import gralc_cache_root

    return gralc_cache_root() / "precision.json"


def _cached_speedups() -> dict[str, float]:
    """The cache file's ``{machine key: speedup}``; an unreadable or malformed file is
    ignored (re-measured, then rewritten): it is a cache GraLC owns, never trusted."""
    from gralc.safe_load import read_json_untrusted

    path = _cache_file()
    try:
        data = read_json_untrusted(path, "precision cache", expect=dict)
    except FileNotFoundError:
        return {}
    except (ValueError, OSError) as e:
        logger.warning("ignoring the precision cache %s (%s); measuring again", path, e)
        return {}
    return {k: float(v) for k, v in data.items()
            if isinstance(k, str) and isinstance(v, (int, float)) and not isinstance(v, bool)
            and 0.0 < float(v) < 1e3}


@lru_cache(maxsize=1)
def bf16_speedup() -> float:
    """bf16's measured speed-up over fp32 on this CPU (:func:`probe_bf16_speedup`), read from
    the per-machine cache or measured once and stored there (a cache that cannot be written
    only costs the next process the same ~0.2 s).

    Example: ``bf16_speedup()`` -> ``0.56`` on a 2-core avx512_bf16 Xeon without AMX (fp32
    is chosen there), ~2.5 on an AMX Xeon."""
    from gralc.atomic import write_json_atomic

    key = machine_key()
    cached = _cached_speedups()
    if key in cached:
        return cached[key]
    speedup = probe_bf16_speedup()
    try:
        _cache_file().parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(_cache_file(), {**cached, key: round(speedup, 4)})
    except OSError as e:
        logger.info("precision cache %s not written (%s)", _cache_file(), e)
    return speedup


def resolve_precision(precision: str, device: torch.device) -> str:
    """``fp32`` or ``bf16`` for ``precision`` in :data:`PRECISIONS` on ``device``.

    >>> resolve_precision("fp32", torch.device("cpu"))
    'fp32'
    """
    chosen, why = explain_precision(precision, device)
    if precision == "auto":
        logger.info("encoder precision auto -> %s on %s (%s)", chosen, device.type, why)
    return chosen


def explain_precision(precision: str, device: torch.device) -> tuple[str, str]:
    """``(fp32 or bf16, why)``: what :func:`resolve_precision` picks and the reason, for logs
    and result headers.

    >>> explain_precision("bf16", torch.device("cpu"))
    ('bf16', 'set explicitly')
    """
    if precision not in PRECISIONS:
        raise ValueError(f"encoder precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "auto":
        return precision, "set explicitly"
    ok, why = native_bf16(device)
    if not ok or device.type != "cpu":
        return ("bf16" if ok else "fp32"), why
    speedup = bf16_speedup()
    chosen = "bf16" if speedup >= BF16_MIN_SPEEDUP else "fp32"
    return chosen, (f"{why}; bf16 measured {speedup:.2f}x fp32's speed on this CPU "
                    f"(bf16 needs >= {BF16_MIN_SPEEDUP}x)")


__all__ = ["BF16_MIN_SPEEDUP", "NATIVE_BF16_FLAGS", "PRECISIONS", "bf16_speedup", "cpu_flags",
           "explain_precision", "machine_key", "native_bf16", "probe_bf16_speedup",
           "resolve_precision"]
