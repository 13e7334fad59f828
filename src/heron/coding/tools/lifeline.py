"""Tool children that die with heron, and leftovers reaped at the next start (Linux).

In the sandbox a command's processes live in a PID namespace that bubblewrap ends with
heron (``--die-with-parent``). Without it (``--sandbox off``, or a machine where it cannot
run) a SIGKILLed heron would leave them running, so:

* the command's first process asks the kernel to kill it when heron dies
  (``PR_SET_PDEATHSIG`` through ``prctl``, set between fork and exec);
* that does not reach what it started, so every tool child carries ``HERON_TOOL_OWNER=<heron
  pid>:<its start time>`` in its environment, which its descendants inherit (``setsid`` and
  ``nohup`` ones included), and heron keeps an empty file ``$HERON_HOME/processes/<owner>``
  while it runs tools, removed when it exits normally;
* at start, a file whose heron is gone (no such process, or another one with that pid) is
  a heron that did not exit normally: every process still carrying its owner mark is killed
  and the file removed. The normal case costs one directory listing.

A process that clears its own environment (``env -i``) escapes the mark; that is said in
docs/permissions.md.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import signal
import sys
import threading
from pathlib import Path

log = logging.getLogger(__name__)

MARK = "HERON_TOOL_OWNER"
_PR_SET_PDEATHSIG = 1
_registered: set[Path] = set()
_lock = threading.Lock()


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22):
    with the pid it names one process, even after the pid is reused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    return fields[19] if len(fields) > 19 else None


def owner() -> str:
    """This heron process as the mark names it (computed each time: a fork is another owner)."""
    pid = os.getpid()
    return f"{pid}:{start_time(pid) or 0}"


def marked(env: dict[str, str], home: Path) -> dict[str, str]:
    """``env`` with this heron's owner mark; the first time per home, the file that says this
    heron runs tools there (removed at a normal exit)."""
    me = owner()
    directory = home / "processes"
    with _lock:
        if directory not in _registered:
            _registered.add(directory)
            try:
                directory.mkdir(parents=True, exist_ok=True)
                path = directory / me.replace(":", "-")
                path.touch()
                atexit.register(_forget, path)
            except OSError as exc:  # a read-only home: children still die with heron, not reaped later
                log.info("cannot record tool processes under %s: %s", directory, exc)
    return {**env, MARK: me}


def _forget(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def die_with_heron() -> None:
    """``preexec_fn`` of a tool child: SIGKILL when heron dies. Runs in the child between fork
    and exec; if heron died before it was set, the child ends at once."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os._exit(137)


def _alive(who: str) -> bool:
    pid_text, _, started = who.partition("-")
    if not pid_text.isdigit():
        return True  # not a file of ours: leave it
    now = start_time(int(pid_text))
    return now is not None and now == started


def reap_leftovers(home: Path) -> list[int]:
    """Kill what tool children of herons that died without exiting are still running; returns
    their pids. Cheap when there is nothing to do: one listing of ``$HERON_HOME/processes``."""
    directory = home / "processes"
    try:
        stale = [p for p in directory.iterdir() if not _alive(p.name)]
    except OSError:
        return []
    if not stale:
        return []
    marks = {f"{MARK}={p.name.replace('-', ':')}".encode() for p in stale}
    killed = [pid for pid in _marked_processes(marks) if _kill(pid)]
    for path in stale:
        _forget(path)
    if killed:
        log.warning("killed %d process(es) left running by a heron that did not exit: %s", len(killed), killed)
    return killed


def _marked_processes(marks: set[bytes]) -> list[int]:
    found: list[int] = []
    me = os.getpid()
    try:
        entries = [e.name for e in os.scandir("/proc") if e.name.isdigit()]
    except OSError:
        return found
    for name in entries:
        if int(name) == me:
            continue
        try:
            environ = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue  # gone, or another user's
        if any(var in marks for var in environ.split(b"\0")):
            found.append(int(name))
    return found


def _kill(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        return False
    return True
