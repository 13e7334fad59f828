"""Programs that delete files, or write files their arguments do not name.

A ``Bash(rm:*)`` deny rule is about deleting files, so the programs that delete as their
job count as ``rm`` for it: ``unlink f``, ``shred -u f``, ``find … -delete``, ``rsync
--remove-source-files``. And a path rule (``Edit(locked/**)``) is about the files under
it, so a program that writes whatever lands beneath a directory - an archive extracted
(``tar -x``, ``unzip``, ``cpio -i``), a recursive copy (``cp -r``, ``rsync``), a patch, a
recursive ``rm``/``chmod``, git changing the work tree - names that directory as a
*tree*: the engine asks when a tree holds a place a path rule protects, since which files
will land there is known only when it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from heron.coding.permissions.findings import Hidden, operands, option_value

_CP_VALUE_OPTIONS = frozenset({"-t", "--target-directory", "-S", "--suffix"})
_RSYNC_VALUE_OPTIONS = frozenset({"-e", "--rsh", "-f", "--filter", "--exclude", "--include", "-T", "--temp-dir"})
# git commands that change the files of the work tree
_GIT_WORK_TREE = frozenset(
    {
        "checkout",
        "switch",
        "restore",
        "reset",
        "stash",
        "merge",
        "rebase",
        "pull",
        "apply",
        "am",
        "cherry-pick",
        "revert",
        "clean",
        "rm",
        "mv",
        "read-tree",
        "checkout-index",
    }
)


def _recursive(words: list[str]) -> bool:
    return any(
        w in ("-r", "-R", "-a", "--recursive", "--archive")
        or (w.startswith("-") and not w.startswith("--") and any(c in w[1:] for c in "rRa"))
        for w in words[1:]
    )


def _tar(words: list[str], found: Hidden) -> None:
    first = words[1] if len(words) > 1 else ""
    extracting = any(
        w in ("-x", "--extract", "--get") or (w.startswith("-") and not w.startswith("--") and "x" in w[1:])
        for w in words[1:]
    ) or (bool(first) and not first.startswith("-") and "x" in first)
    if not extracting or any(w in ("-O", "--to-stdout") for w in words):
        return
    if any(w == "--absolute-names" or (w.startswith("-") and not w.startswith("--") and "P" in w) for w in words):
        found.trees.append("/")  # members may name any absolute path
    found.trees.extend(option_value(words, "-C", "--directory") or ["."])


def _unzip(words: list[str], found: Hidden) -> None:
    if any(w in ("-l", "-t", "-p", "-v", "-Z", "-z") for w in words[1:]):
        return  # lists, tests or prints: writes no file
    found.trees.extend(option_value(words, "-d", None) or ["."])


def _cpio(words: list[str], found: Hidden) -> None:
    clusters = [w for w in words[1:] if w.startswith("-") and not w.startswith("--")]
    if any("i" in w for w in clusters) or "--extract" in words:
        found.trees.extend(option_value(words, "-D", "--directory") or ["."])
    elif any("p" in w for w in clusters) or "--pass-through" in words:
        found.trees.extend(operands(words)[-1:] or ["."])


def _copy(words: list[str], found: Hidden) -> None:
    """``cp -r src dest``: everything under ``src`` lands under ``dest``."""
    if not _recursive(words):
        return
    found.trees.extend(option_value(words, "-t", "--target-directory") or operands(words, _CP_VALUE_OPTIONS)[-1:])


def _rsync(words: list[str], found: Hidden) -> None:
    named = operands(words, _RSYNC_VALUE_OPTIONS)
    if len(named) >= 2:
        found.trees.append(named[-1].split(":", 1)[-1] if ":" in named[-1] else named[-1])
    if "--remove-source-files" in words:
        found.programs.append(["rm", *named[:-1]])


def _patch(words: list[str], found: Hidden) -> None:
    found.trees.extend(option_value(words, "-d", "--directory") or ["."])


def _rm(words: list[str], found: Hidden) -> None:
    if _recursive(words):
        found.trees.extend(operands(words))


def _change_mode(words: list[str], found: Hidden) -> None:
    """``chmod -R``, ``chown -R``, ``chgrp -R``: everything under the operands (after the mode or owner)."""
    if any(w in ("-R", "--recursive") for w in words[1:]):
        found.trees.extend(operands(words)[1:])


def _find(words: list[str], found: Hidden) -> None:
    """``find … -delete`` removes what it finds: ``rm`` for a deny rule, under the roots."""
    if "-delete" in words:
        roots = find_roots(words)
        found.programs.append(["rm", "-r", *roots])
        found.trees.extend(roots)


def find_roots(words: list[str]) -> list[str]:
    """The directories ``find`` walks: the operands before the first expression word."""
    roots: list[str] = []
    n = 1
    while n < len(words):
        word = words[n]
        if word in ("-H", "-L", "-P") or word.startswith("-O"):
            n += 1
        elif word == "-D":
            n += 2
        elif word.startswith(("-", "(", "!", ")")) or word == ",":
            break
        else:
            roots.append(word)
            n += 1
    return roots or ["."]


def _unlink(words: list[str], found: Hidden) -> None:
    found.programs.append(["rm", *words[1:]])


def _shred(words: list[str], found: Hidden) -> None:
    removes = any(
        w == "-u" or w.startswith("--remove") or (w.startswith("-") and not w.startswith("--") and "u" in w[1:])
        for w in words[1:]
    )
    if removes:
        found.programs.append(["rm", *operands(words, frozenset({"-n", "--iterations", "-s", "--size"}))])


def git_work_tree(words: list[str], found: Hidden, where: str) -> None:
    """``git checkout``, ``git stash``, ``git pull`` …: they may rewrite any file of the work tree
    (``words``: the git command without its global options, run in ``where`` - its ``-C``)."""
    if len(words) > 1 and words[1] in _GIT_WORK_TREE:
        found.trees.append(where)


WRITERS: dict[str, Callable[[list[str], Hidden], None]] = {
    "tar": _tar,
    "bsdtar": _tar,
    "unzip": _unzip,
    "cpio": _cpio,
    "cp": _copy,
    "rsync": _rsync,
    "patch": _patch,
    "rm": _rm,
    "chmod": _change_mode,
    "chown": _change_mode,
    "chgrp": _change_mode,
    "find": _find,
    "unlink": _unlink,
    "shred": _shred,
}
