"""`omectl run` holds glibc's mmap threshold: a large block is mapped whole (and unmapped when freed) instead of
carved from the heap, unless the environment chose the threshold itself."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from omectl.malloc import hold_mmap_threshold

ROOT = Path(__file__).resolve().parents[2]
GLIBC = platform.system() == "Linux" and platform.libc_ver()[0] == "glibc"


def test_the_environments_threshold_stands(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.mmap_threshold=262144")
    assert hold_mmap_threshold() is False
    monkeypatch.delenv("GLIBC_TUNABLES")
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "262144")
    assert hold_mmap_threshold() is False


PROBE = """
import ctypes, sys
from omectl.malloc import hold_mmap_threshold

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                                              "uordblks", "fordblks", "keepcost")]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
large = bytearray(8 << 20)
del large  # a freed mapped block of 8 MiB: a dynamic threshold would rise to it
held = sys.argv[1] == "held" and hold_mmap_threshold()
before = libc.mallinfo2().hblkhd
block = bytearray(512 << 10)
print(held, libc.mallinfo2().hblkhd - before >= 512 << 10)
"""


@pytest.mark.skipif(not GLIBC, reason="glibc's malloc only")
def test_once_held_a_block_above_128_kib_is_mapped_whole_even_after_larger_ones_were_freed() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("GLIBC_TUNABLES", "MALLOC_MMAP_THRESHOLD_")}
    env["PYTHONPATH"] = str(ROOT)

    def mapped(mode: str) -> str:  # a fresh interpreter: the heap has no free space from earlier tests to reuse
        run = subprocess.run([sys.executable, "-c", PROBE, mode], env=env, capture_output=True, text=True, check=True)
        return run.stdout.strip()

    assert mapped("held") == "True True"
    assert mapped("default") == "False False"  # glibc's own dynamic threshold: carved from the heap
