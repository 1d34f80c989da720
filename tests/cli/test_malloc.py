"""`omectl run` holds glibc's mmap threshold: a large block is mapped whole (and unmapped when freed) instead of
carved from the heap, unless the environment chose the threshold itself."""

from __future__ import annotations

import ctypes
import platform

import pytest

from omectl.malloc import hold_mmap_threshold


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd")] + [
        (name, ctypes.c_size_t) for name in ("usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")
    ]


GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def test_the_environments_threshold_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=262144")
    assert hold_mmap_threshold() is False
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "262144")
    assert hold_mmap_threshold() is False


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_once_held_a_block_above_128_kib_is_mapped_whole_even_after_larger_ones_were_freed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    large = bytearray(8 << 20)
    del large  # a freed mapped block of 8 MiB: a dynamic threshold would rise to it
    assert hold_mmap_threshold() is True
    mapped_before = libc.mallinfo2().hblkhd
    block = bytearray(512 << 10)
    assert libc.mallinfo2().hblkhd - mapped_before >= 512 << 10
    del block
