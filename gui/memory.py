"""Memory the window's process gives back to the system once a model it showed is gone."""

from __future__ import annotations

import sys


def give_back_freed_memory() -> bool:
    """Ask glibc to return the free pages of its heap to the system (`malloc_trim`); False where there is no
    glibc. A model's graphs, layouts and scene are freed when the next one replaces it, but the allocator
    kept those pages: 20 models opened in one window grew 1.16-1.26x (benchmarks/bench_leak.py), all of it
    free memory the process still held (trimmed before each reading: 1.05x). ctypes lets the interpreter
    lock go for the call, so workers run on meanwhile."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name or "libc.so.6")
        return bool(libc.malloc_trim(0))
    except (OSError, AttributeError):  # musl and other C libraries have no malloc_trim
        return False
