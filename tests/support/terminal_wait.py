"""Waiting until a child process is blocked reading its terminal.

A key sent to a line prompt (``input()``) the moment the prompt appears can land between
the prompt's write and the read that follows: a Ctrl+C then raises nothing until the read
returns (Python checks the signal flag on an interrupted read, and none was interrupted).
A user cannot type that fast; a test can, on a loaded machine. Tests that answer a line
prompt with a signal-generating key wait for the read first.
"""

from __future__ import annotations

import time
from pathlib import Path

# the read(2) system call's number on the machines the tests run on
READ_SYSCALLS = {"0", "63"}  # x86_64, aarch64


def blocked_in_read(pid: int) -> bool:
    """Whether ``pid`` is inside read(2) now (``/proc/<pid>/syscall``'s first field)."""
    try:
        return Path(f"/proc/{pid}/syscall").read_text().split()[0] in READ_SYSCALLS
    except (OSError, IndexError):
        return False


def wait_until_reading(pid: int, timeout: float = 30.0) -> None:
    """Return once ``pid`` waits in read(2); after ``timeout`` seconds return anyway (the
    caller's own expectation then fails with the terminal's transcript)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not blocked_in_read(pid):
        time.sleep(0.02)
