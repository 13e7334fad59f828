"""Programs that run another program given as their arguments (``sudo rm x``,
``timeout 5 rm x``, ``nohup sh -c '…'``), and git's global options (``git -C dir push``).

A deny rule is about the program that finally runs, so the checker looks through these:
:func:`unwrap` gives every position a command could start at, and :func:`git_variant`
the git command without its global options, so ``Bash(git push:*)`` also catches
``git -c k=v push``. Each wrapper's options that take a value are listed, so the value is
not mistaken for the program (``command -p rm`` runs ``rm``; ``sudo -u root rm`` too).
"""

from __future__ import annotations

# wrapper -> its options that take a separate value
WRAPPER_OPTIONS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "--user", "--group"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "--unset", "--chdir"}),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "--class", "--classdata"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset(
        {
            "-I",
            "-L",
            "-n",
            "-P",
            "-s",
            "-d",
            "-a",
            "-E",
            "--arg-file",
            "--delimiter",
            "--max-args",
            "--max-procs",
            "--max-chars",
            "--max-lines",
            "--replace",
        }
    ),
    "builtin": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "setsid": frozenset(),
    "chronic": frozenset(),
    "unbuffer": frozenset(),
    "busybox": frozenset(),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "parallel": frozenset({"-j", "--jobs"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "numactl": frozenset({"-C", "-N", "-m", "-i", "-p", "--physcpubind", "--cpunodebind", "--membind"}),
    "fakeroot": frozenset({"-l", "-s", "-i", "--lib", "--faked"}),
    "unshare": frozenset({"-S", "-G", "-R", "-w", "--setuid", "--setgid", "--root", "--wd"}),
    "nsenter": frozenset({"-t", "-S", "-G", "-r", "-w", "--target", "--setuid", "--setgid", "--root", "--wd"}),
    "setpriv": frozenset({"--reuid", "--regid", "--groups", "--inh-caps", "--bounding-set"}),
    "prlimit": frozenset({"-p", "--pid"}),
    "strace": frozenset({"-e", "-o", "-p", "-s", "-u", "-E", "-P", "-a", "-b", "-I", "-S", "-O", "-X"}),
    "ltrace": frozenset({"-e", "-o", "-p", "-s", "-u", "-n", "-a", "-A", "-D", "-l", "-w"}),
    "valgrind": frozenset(),
    "runuser": frozenset({"-u", "-g", "-G", "--user", "--group", "--supp-group"}),
    "sg": frozenset(),
    "eatmydata": frozenset(),
    "torsocks": frozenset(),
    "proxychains": frozenset({"-f"}),
    "proxychains4": frozenset({"-f"}),
    "catchsegv": frozenset(),
    "pkexec": frozenset({"--user"}),
    "systemd-run": frozenset({"-p", "-u", "-E", "--unit", "--property", "--setenv", "--uid", "--gid", "--slice"}),
    "firejail": frozenset(),
    "faketime": frozenset({"-m", "-f"}),
}
# wrappers whose first operand is not the program: `timeout 5 CMD`, `chroot DIR CMD`, `flock FILE CMD`
_FIRST_OPERAND = frozenset({"timeout", "chroot", "flock", "chrt", "taskset", "sg", "faketime"})
WRAPPERS = frozenset(WRAPPER_OPTIONS) | _FIRST_OPERAND
# programs whose `-c SCRIPT` is a shell script: `su -c '…'`, `script -c '…'`, `flock -c '…'`
SCRIPT_OPTION_PROGRAMS = frozenset({"su", "script", "flock"})

_GIT_VALUE_OPTIONS = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env", "--super-prefix"}
)


def skip_wrapper(words: list[str], start: int, name: str) -> int:
    """Where the wrapped program starts in ``words[start:]`` (``name`` is at ``start``)."""
    options = WRAPPER_OPTIONS.get(name, frozenset())
    operand_skipped = name not in _FIRST_OPERAND
    i = start + 1
    while i < len(words):
        word = words[i]
        if word == "--":
            i += 1
            break
        if word.startswith("-") and len(word) > 1:
            i += 2 if word in options else 1
        elif (name == "env" and "=" in word) or (name == "nice" and word.lstrip("-+").isdigit()):
            i += 1  # `env X=1 rm`, `nice 5 rm`
        elif not operand_skipped:
            operand_skipped = True
            i += 1
        else:
            break
    if not operand_skipped and i < len(words):
        i += 1  # `timeout -- 5 rm`
    return i


def unwrap(words: list[str]) -> list[int]:
    """Every index at which a program starts: 0, then past each wrapper in turn."""
    starts: list[int] = []
    start = 0
    while start < len(words):
        starts.append(start)
        base = words[start].rsplit("/", 1)[-1]
        if base not in WRAPPERS:
            break
        start = skip_wrapper(words, start, base)
    return starts


def git_variant(words: list[str]) -> list[str] | None:
    """``git -C dir -c k=v --no-pager push x`` -> ``git push x``; None when nothing to drop."""
    if not words or words[0].rsplit("/", 1)[-1] != "git":
        return None
    i = 1
    while i < len(words) and words[i].startswith("-"):
        word = words[i]
        i += 2 if word in _GIT_VALUE_OPTIONS else 1
    return ["git", *words[i:]] if i > 1 else None
