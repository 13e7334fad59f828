"""The sandbox on Linux: bubblewrap (Debian's ``bubblewrap`` package), the tool Flatpak uses.

Why bubblewrap and not Landlock through a Python binding: bubblewrap gives, in one
well-kept program, all three boundaries the sandbox needs - mount namespaces (a read-only
file system with writable holes, hidden paths), a PID namespace (heron's own
``/proc/<pid>/environ`` and ``cmdline`` are not there to read, and every process a command
starts, ``setsid`` daemons included, ends with it) and a network namespace. Landlock
covers only the first and needs a kernel of 5.13 or later with it enabled.

A command runs as ``bwrap <hardening> <mounts> -- shell -c command``; ``--die-with-parent``
ends the sandbox when heron dies (so tool children never outlive a killed heron). Whether the
kernel lets bubblewrap make namespaces (containers often do not) is probed once per process;
where it cannot, the caller runs the command unconfined and says so once per session.

The mounts are a boundary only for a process that cannot change them. Run by root (CI
machines and many containers), bubblewrap keeps every capability of root inside the sandbox
unless told otherwise, and a command can then ``umount`` the empty directory over heron's home
and read the keys in ``models.json``, remount a read-only directory (or ``/``) writable, or
lift the fresh ``/proc`` off the machine's one. So every sandbox drops all capabilities
(:data:`HARDENINGS`): a user namespace of its own (``--unshare-user``), in which a process
cannot make another (``--disable-userns``), and ``--cap-drop ALL``; bubblewrap also sets
``no_new_privs``, so no set-user-ID program gives them back. The probe picks the strongest
set the installed bubblewrap and kernel accept; an unprivileged user's sandbox keeps no
capability in any case, so for one the last step is none, while root gets no sandbox at
all rather than one it could undo.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from heron.coding.sandbox.policy import SandboxPolicy

# The ways to drop every capability in the sandbox, strongest first: bubblewrap 0.8 has
# ``--disable-userns``; a kernel or a set-user-ID bubblewrap may refuse a user namespace.
HARDENINGS: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns", "--cap-drop", "ALL"),
    ("--unshare-user", "--cap-drop", "ALL"),
    ("--cap-drop", "ALL"),
)


@dataclass(frozen=True, slots=True)
class Availability:
    """Whether the sandbox can run here, and if not, why (for the one-time note); when it
    can, the arguments that drop every capability in it (:data:`HARDENINGS`)."""

    ok: bool
    reason: str = ""
    hardening: tuple[str, ...] = ()


_probed: dict[str, Availability] = {}


def availability(binary: str | None = None) -> Availability:
    """Whether bubblewrap is installed and the kernel lets it make its namespaces with its
    capabilities dropped; asked once per process (a probe costs a few milliseconds, and the
    next way to drop them is tried only when one is refused)."""
    found = binary or shutil.which("bwrap")
    if found is None:
        return Availability(False, "bubblewrap (bwrap) is not installed; on Debian: apt-get install bubblewrap")
    cached = _probed.get(found)
    if cached is not None:
        return cached
    steps = HARDENINGS if os.geteuid() == 0 else (*HARDENINGS, ())
    result = Availability(False, "bubblewrap was not tried")
    for hardening in steps:
        result = _probe(found, hardening)
        if result.ok or result.reason.startswith("bubblewrap could not start"):
            break
    if not result.ok and os.geteuid() == 0:
        result = Availability(
            False, f"bubblewrap cannot drop root's capabilities in the sandbox, which could undo it ({result.reason})"
        )
    _probed[found] = result
    return result


def _probe(binary: str, hardening: tuple[str, ...]) -> Availability:
    """One try of bubblewrap with ``hardening`` and the namespaces every sandbox makes."""
    probe = [binary, *hardening, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    try:
        done = subprocess.run(
            [*probe, "--unshare-pid", "--unshare-net", "true"], capture_output=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Availability(False, f"bubblewrap could not start: {exc}")
    if done.returncode == 0:
        return Availability(True, hardening=hardening)
    why = done.stderr.decode(errors="replace").strip().splitlines()
    return Availability(False, f"the kernel refused bubblewrap's namespaces ({why[-1] if why else done.returncode})")


def wrap_command(
    policy: SandboxPolicy, argv: list[str], cwd: Path, *, binary: str, hardening: tuple[str, ...]
) -> list[str]:
    """``argv`` run inside the sandbox ``policy`` describes, starting in ``cwd``, with the
    ``hardening`` the probe chose (:func:`availability`): the one builder of a sandbox's
    command line, for bash, script and hooks alike."""
    args = [binary, *hardening, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not policy.network:
        args.append("--unshare-net")
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for temp in policy.temp:
        args += ["--bind", str(temp), str(temp)]
    if policy.mode == "workspace-write":
        args += ["--bind", str(policy.project), str(policy.project)]
        for path in policy.writable:
            args += ["--bind-try", str(path), str(path)]
    else:  # mounted again, read-only: a project under /tmp would be writable with the temp dir
        args += ["--ro-bind", str(policy.project), str(policy.project)]
    for path in policy.read_only:
        args += ["--ro-bind-try", str(path), str(path)]
    for path in (*policy.hidden, *_home_parts(policy.home, policy.project)):
        args += _hide(path)
    args += ["--chdir", str(cwd), "--", *argv]
    return args


def _home_parts(home: Path, project: Path) -> list[Path]:
    """What of heron's home to hide: all of it, or - when the project lies inside it (a
    ``heron batch`` task's work directory) - every entry but the way down to the project."""
    if project != home and home not in project.parents:
        return [home]
    if project == home:
        return []
    step = project.relative_to(home).parts[0]
    try:
        entries = sorted(home.iterdir())
    except OSError:
        return []
    inner = [] if (home / step) == project else _home_parts(home / step, project)
    return [entry for entry in entries if entry.name != step] + inner


def _hide(path: Path) -> list[str]:
    """Mounts that make ``path`` unreadable: an empty read-only directory over a
    directory, the empty ``/dev/null`` over a file; nothing for a path that is not there."""
    if path.is_dir():
        return ["--tmpfs", str(path), "--remount-ro", str(path)]
    if path.exists():
        return ["--ro-bind", os.devnull, str(path)]
    return []
