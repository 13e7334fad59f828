"""Keys out of ``/proc/<heron>/environ`` and ``/proc/<heron>/cmdline``.

heron gives its tool children an environment without credentials (heron.coding.secrets),
but on Linux any process of the same user can read another's initial environment and
command line from ``/proc/<pid>/environ`` and ``/proc/<pid>/cmdline``, and a bash child
knows heron's pid (``$PPID``). Those files are not copies: the kernel reads them from the
process's own memory, the block the program was started with (between the ``env_start`` /
``env_end`` and ``arg_start`` / ``arg_end`` addresses ``/proc/self/stat`` gives). Python
copied both into ``os.environ`` and ``sys.argv`` when it started and never reads the block
again, so heron overwrites, in place, the values there that are credentials: variables
whose names are credentials (the one rule, :func:`heron.coding.secret_names.is_secret_name`),
the value after ``--api-key``, and the password in a URL's ``user:password@``. ``ps e`` and
``ps -f`` read the same memory and show the overwritten bytes too.

No library does this for environment blocks (setproctitle rewrites the title, not
selected values), so it is written here: a few ``ctypes`` writes into memory the process
owns. Where it cannot be done (not Linux, no ``/proc``, an unexpected layout) nothing is
changed and :func:`scrub_process_block` says why; the children's environment stays
clean either way.
"""

from __future__ import annotations

import ctypes
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

from heron.coding.secret_names import is_secret_name

MASK = ord("x")
_URL_PASSWORD = re.compile(rb"(?<=://)([^/@:\s]*):([^/@\s]+)@")
KEY_FLAGS = (b"--api-key",)
STAT_FIELDS = (48, 49, 50, 51)  # arg_start, arg_end, env_start, env_end (proc(5), since Linux 3.5)


def _areas(stat: str) -> tuple[int, int, int, int]:
    """The four addresses from the text of ``/proc/self/stat`` (the command name may hold spaces)."""
    fields = stat[stat.rindex(")") + 2 :].split()
    arg_start, arg_end, env_start, env_end = (int(fields[n - 3]) for n in STAT_FIELDS)
    return arg_start, arg_end, env_start, env_end


def secret_spans_in_environ(block: bytes, is_secret: Callable[[str], bool] = is_secret_name) -> list[tuple[int, int]]:
    """(start, end) of every credential value (and URL password) in a NUL-separated environment block."""
    spans: list[tuple[int, int]] = []
    offset = 0
    for item in block.split(b"\0"):
        name, sep, value = item.partition(b"=")
        start = offset + len(name) + len(sep)
        if sep and value and is_secret(name.decode("utf-8", "replace")):
            spans.append((start, start + len(value)))
        elif sep:
            spans.extend((start + m.start(2), start + m.end(2)) for m in _URL_PASSWORD.finditer(value))
        offset += len(item) + 1
    return spans


def secret_spans_in_argv(block: bytes) -> list[tuple[int, int]]:
    """(start, end) of every ``--api-key`` value and URL password in a NUL-separated argument block."""
    spans: list[tuple[int, int]] = []
    offset = 0
    after_flag = False
    for item in block.split(b"\0"):
        if after_flag and item:
            spans.append((offset, offset + len(item)))
        after_flag = item in KEY_FLAGS
        for flag in KEY_FLAGS:
            if item.startswith(flag + b"=") and len(item) > len(flag) + 1:
                spans.append((offset + len(flag) + 1, offset + len(item)))
        spans.extend((offset + m.start(2), offset + m.end(2)) for m in _URL_PASSWORD.finditer(item))
        offset += len(item) + 1
    return spans


def _mask(address: int, spans: list[tuple[int, int]]) -> int:
    for start, end in spans:
        ctypes.memset(address + start, MASK, end - start)
    return len(spans)


def scrub_process_block(stat_path: Path = Path("/proc/self/stat")) -> str | None:
    """Overwrite the credentials in this process's initial environment and arguments.
    Returns None when done (or nothing was there), or why it could not be done."""
    if not sys.platform.startswith("linux"):
        return f"not on Linux ({sys.platform}): /proc/<heron>/environ is not scrubbed"
    try:
        arg_start, arg_end, env_start, env_end = _areas(stat_path.read_text())
    except (OSError, ValueError, IndexError) as exc:
        return f"cannot read this process's memory layout: {exc}"
    if not (0 < arg_start < arg_end and 0 < env_start < env_end and env_end - env_start < 1 << 24):
        return "this process's memory layout is not the expected one"
    environ = ctypes.string_at(env_start, env_end - env_start)
    argv = ctypes.string_at(arg_start, arg_end - arg_start)
    _mask(env_start, secret_spans_in_environ(environ))
    _mask(arg_start, secret_spans_in_argv(argv))
    _repoint_libc_environ(environ)
    return None


def _repoint_libc_environ(block: bytes) -> None:
    """The C library's ``environ`` still points into the block just overwritten, and a child
    started without an explicit environment inherits it. Setting each variable again makes
    libc hold its own copy of the real value (``os.environ`` never changed), so such a child
    gets what it got before; only the kernel's view of the original block is masked."""
    for item in block.split(b"\0"):
        name, sep, _value = item.partition(b"=")
        text = name.decode("utf-8", "surrogateescape")
        if sep and text in os.environ:
            os.putenv(text, os.environ[text])
