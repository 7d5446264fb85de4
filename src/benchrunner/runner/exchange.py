"""Replacing a file that exists by another, atomically, without renaming over it.

``rename(new, target)`` over an existing ``target`` is atomic, but on ext4 (``auto_da_alloc``,
the default) it also starts writing ``new``'s data out and frees ``target``'s inode inside the
call: a few milliseconds of the caller's time for a record of a few hundred bytes
(benchmarks/RESULTS.md). Linux's ``renameat2(RENAME_EXCHANGE)`` swaps the two names atomically
instead, and the old file, now under ``new``'s name, is the caller's to remove or to reuse.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
# what a kernel, filesystem or seccomp profile without the exchange answers (EPERM too for a
# file the rename cannot move either: the exchange is given up only once the rename succeeds)
_CANNOT_EXCHANGE = (errno.EINVAL, errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP)

_Renameat2 = Callable[[int, bytes, int, bytes, int], int]

_lock = threading.Lock()
_renameat2: _Renameat2 | None = None
_looked_up = False


def swap_in(new: Path, target: Path) -> bool:
    """Put ``new`` in ``target``'s place, atomically: a reader of ``target`` sees the old file
    or the new one. True: ``target`` existed and the two names were exchanged, so ``new`` now
    names the old file. False: ``new`` was renamed to ``target`` (there was none, or the
    filesystem cannot exchange names) and is gone. Raises OSError as ``os.replace`` does."""
    exchange = _exchange_call()
    if exchange is None:
        new.replace(target)
        return False
    if not exchange(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE):
        return True
    code = ctypes.get_errno()
    if code != errno.ENOENT and code not in _CANNOT_EXCHANGE:
        raise OSError(code, os.strerror(code), str(new))
    new.replace(target)
    if code != errno.ENOENT:  # the rename went where the exchange did not: never ask again
        _give_up()
    return False


def _exchange_call() -> _Renameat2 | None:
    global _renameat2, _looked_up
    with _lock:
        if not _looked_up:
            _looked_up = True
            _renameat2 = _find_renameat2()
        return _renameat2


def _give_up() -> None:
    global _renameat2
    with _lock:
        _renameat2 = None


def _find_renameat2() -> _Renameat2 | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2  # glibc 2.28 and later
    except (OSError, AttributeError):
        return None
    name = ctypes.c_char_p
    function.argtypes = (ctypes.c_int, name, ctypes.c_int, name, ctypes.c_uint)
    function.restype = ctypes.c_int
    exchange: _Renameat2 = function
    return exchange
