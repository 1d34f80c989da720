"""glibc's malloc set for a long-running controller (`omectl run`): its mmap threshold held at 128 KiB.

glibc raises its mmap threshold to the size of the largest mmapped block freed (up to 32 MiB): after the first
list page or large apply answer is freed, every later block of that size (answers, watch lines, list pages) is
carved from the heap instead, and the heap keeps the space freed between longer-lived blocks. Held at glibc's
own default (128 KiB, with the heap's top trimmed past 128 KiB free), such a block that the heap's free space
cannot hold is mapped and unmapped whole instead of growing the heap: at 1,000 InferenceServices a cold start left
8 KiB per InferenceService free in the heap, 1.7 KiB with it (benchmarks/README.md, `Memory per InferenceService`).
Elsewhere than on glibc, nothing is set.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
from typing import Final

M_TRIM_THRESHOLD: Final = -1  # glibc's malloc.h
M_MMAP_THRESHOLD: Final = -3
THRESHOLD_BYTES: Final = 128 * 1024


def hold_mmap_threshold() -> bool:
    """Set the thresholds (True), unless this is not glibc or the environment already sets them (False)."""
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if "malloc.mmap_threshold" in tunables or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False  # the operator's choice stands
    libc = None
    with contextlib.suppress(OSError):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    if libc is None or not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False
    return bool(libc.mallopt(M_MMAP_THRESHOLD, THRESHOLD_BYTES)) and bool(
        libc.mallopt(M_TRIM_THRESHOLD, THRESHOLD_BYTES)
    )
