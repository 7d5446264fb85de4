"""ASLR off for the job's processes only: the ``ADDR_NO_RANDOMIZE`` personality flag (what
``setarch -R`` sets) survives fork and exec, so set on the runner it reaches every job process
it starts, while the host-wide ``kernel.randomize_va_space`` stays as it is for everyone else.
The runner's own address space was laid out at its start and is unaffected."""

from __future__ import annotations

import ctypes
import ctypes.util
import os

ADDR_NO_RANDOMIZE = 0x0040000
_QUERY = 0xFFFFFFFF


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def current() -> int:
    """This process's personality; raises OSError where there is none (not Linux)."""
    value = int(_libc().personality(ctypes.c_ulong(_QUERY)))
    if value == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return value


def set_personality(value: int) -> None:
    """Raises OSError if the kernel refuses."""
    if int(_libc().personality(ctypes.c_ulong(value))) == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
