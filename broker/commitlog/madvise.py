"""``madvise(MADV_POPULATE_WRITE)`` on a range of a mapped file, without holding the GIL.

The warm thread (:mod:`rocketmq_emu.broker.commitlog.warm`) pre-faults the commitlog's next
pages while the reactor thread appends. ``mmap.madvise`` keeps the GIL for the whole call (a
few milliseconds for 4 MiB of new pages), which would stall the reactor as long; libc's
``madvise`` called through ``ctypes`` releases it. The call changes no byte, so the writer may
append into the range meanwhile. Where libc cannot be loaded, ``mmap.madvise`` does the same
work with the GIL held.
"""

from __future__ import annotations

import ctypes
import mmap
import os

#: Linux 5.14's MADV_POPULATE_WRITE (Python exposes it from 3.12 on some builds only).
MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)
#: The kernel's page size: madvise wants a page-aligned start.
PAGE_SIZE = mmap.PAGESIZE


def _libc_madvise():
    try:
        # The process's own symbols include libc's: no ctypes.util.find_library, which runs
        # ldconfig in a subprocess (~15 ms at every start).
        fn = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


_madvise = _libc_madvise()


def populate_write(mm: mmap.mmap, start: int, length: int) -> None:
    """Fault ``mm[start:start + length]`` in writable (no byte changes); raises OSError when
    the kernel refuses (before Linux 5.14: EINVAL)."""
    aligned = start - start % PAGE_SIZE
    length += start - aligned
    if length <= 0:
        return
    if _madvise is None:
        mm.madvise(MADV_POPULATE_WRITE, aligned, length)
        return
    # The mapping's address: the temporary ctypes view is released at once, so the mmap can
    # still be closed or resized later (an open export would forbid it).
    base = ctypes.addressof(ctypes.c_char.from_buffer(mm))
    if aligned + length > len(mm):
        raise ValueError(f"range {aligned}+{length} beyond the {len(mm)}-byte mapping")
    if _madvise(base + aligned, length, MADV_POPULATE_WRITE) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"madvise(MADV_POPULATE_WRITE): {os.strerror(err)}")
