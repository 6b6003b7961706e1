"""Which precision the encoder runs in: ``fp32``, ``bf16`` (torch.autocast) or ``auto``.

``auto`` picks bf16 only where the hardware computes it natively: a CUDA device that
supports bf16, or a CPU whose flags include ``avx512_bf16`` or ``amx_bf16`` (measured on a
2-core AVX512-BF16 EPYC: bf16 autocast ~2.5x faster than fp32; on an AVX2-only CPU it is ~5x
SLOWER, so there fp32 is kept). The choice is logged, with the reason.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import torch

logger = logging.getLogger(__name__)

PRECISIONS = ("fp32", "bf16", "auto")
#: CPU flags (``/proc/cpuinfo``) of native bf16 arithmetic.
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (empty where there is none).

    >>> isinstance(cpu_flags(), frozenset)
    True
    """
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def native_bf16(device: torch.device) -> tuple[bool, str]:
    """``(has native bf16, why)`` for ``device``.

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


def resolve_precision(precision: str, device: torch.device) -> str:
    """``fp32`` or ``bf16`` for ``precision`` in :data:`PRECISIONS` on ``device``.

    >>> resolve_precision("fp32", torch.device("cpu"))
    'fp32'
    """
    if precision not in PRECISIONS:
        raise ValueError(f"encoder precision must be one of {PRECISIONS}, got {precision!r}")
    if precision != "auto":
        return precision
    ok, why = native_bf16(device)
    chosen = "bf16" if ok else "fp32"
    logger.info("encoder precision auto -> %s on %s (%s)", chosen, device.type, why)
    return chosen


__all__ = ["PRECISIONS", "cpu_flags", "native_bf16", "resolve_precision"]
