"""Programs that delete files, or touch every file beneath a directory.

A ``Bash(rm:*)`` deny rule is about deleting files, so the programs that delete as their
job count as ``rm`` for it: ``unlink f``, ``shred -u f``, ``find … -delete``, ``rsync
--remove-source-files``. And a path rule (``Edit(locked/**)``, ``Read(./secrets/**)``) is
about the files under it, so a program that writes whatever lands beneath a directory - an
archive extracted (``tar -x``, ``unzip``, ``cpio -i``), a recursive copy (``cp -r``,
``rsync``), a patch, a recursive ``rm``/``chmod``, git changing the work tree - names that
directory as a *tree*, and one that reads everything beneath one (``grep -r``, ``rg``,
``tar -c``, ``zip -r``, the source of ``cp -r``) as a *read tree*: the engine asks when a
tree holds a place a path rule protects, since which files it touches there is known only
when it runs.
"""

from __future__ import annotations

from collections.abc import Callable

from heron.coding.permissions.findings import Hidden, operands, option_value

_TAR_VALUE_OPTIONS = frozenset({"-f", "--file", "-C", "--directory", "-T", "--files-from", "-X", "--exclude-from"})
_GREP_VALUE_OPTIONS = frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--include", "--exclude"})
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


def _mode(words: list[str], letter: str, long: tuple[str, ...]) -> bool:
    """Whether tar's command line asks for the operation ``letter`` (``-x``, ``xf``, ``-cvf``)."""
    first = words[1] if len(words) > 1 else ""
    return any(w in long or (w.startswith("-") and not w.startswith("--") and letter in w[1:]) for w in words[1:]) or (
        bool(first) and not first.startswith("-") and letter in first
    )


def _tar(words: list[str], found: Hidden) -> None:
    if _mode(words, "c", ("--create",)) or _mode(words, "r", ("--append",)) or _mode(words, "u", ("--update",)):
        found.read_trees.extend(option_value(words, "-C", "--directory"))
        found.read_trees.extend(operands(words, _TAR_VALUE_OPTIONS) or ["."])
    if not _mode(words, "x", ("--extract", "--get")) or any(w in ("-O", "--to-stdout") for w in words):
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
    named = operands(words, _CP_VALUE_OPTIONS)
    target = option_value(words, "-t", "--target-directory")
    found.trees.extend(target or named[-1:])
    found.read_trees.extend(named if target else named[:-1])


def _rsync(words: list[str], found: Hidden) -> None:
    named = operands(words, _RSYNC_VALUE_OPTIONS)
    if len(named) >= 2:
        found.trees.append(named[-1].split(":", 1)[-1] if ":" in named[-1] else named[-1])
        found.read_trees.extend(n for n in named[:-1] if ":" not in n)
    if "--remove-source-files" in words:
        found.programs.append(["rm", *named[:-1]])
    if len(named) >= 2 and any(w.startswith("--delete") or w.startswith("--del") for w in words):
        found.programs.append(["rm", "-r", named[-1]])  # removes what the source does not have


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


def _grep(words: list[str], found: Hidden) -> None:
    """``grep -r PATTERN dir`` (``rgrep``, ``rg``, ``ag``, ``ack``: recursive anyway) reads every file under dir."""
    name = words[0].rsplit("/", 1)[-1]
    if name in ("grep", "egrep", "fgrep") and not any(
        w in ("-r", "-R", "--recursive", "--dereference-recursive")
        or (w.startswith("-") and not w.startswith("--") and ("r" in w[1:] or "R" in w[1:]))
        for w in words[1:]
    ):
        return
    named = operands(words, _GREP_VALUE_OPTIONS)
    given = any(w in ("-e", "-f", "--regexp", "--file") or w.startswith(("--regexp=", "--file=")) for w in words)
    found.read_trees.extend((named if given else named[1:]) or ["."])


def _zip(words: list[str], found: Hidden) -> None:
    named = operands(words)
    if _recursive(words):
        found.read_trees.extend(named[1:])
    if any(w in ("-m", "--move") or (w.startswith("-") and not w.startswith("--") and "m" in w[1:]) for w in words):
        found.programs.append(["rm", *named[1:]])  # the files it zipped are removed


def _compressor(words: list[str], found: Hidden) -> None:
    """``gzip f`` replaces ``f`` with ``f.gz`` (``gunzip``, ``bzip2``, ``xz``, … alike): the original
    is removed unless kept (``-k``) or the output goes to standard output (``-c``)."""
    name = words[0].rsplit("/", 1)[-1]
    flags = "".join(w[1:] for w in words[1:] if w.startswith("-") and not w.startswith("--"))
    longs = [w for w in words[1:] if w.startswith("--")]
    keeps = any(c in flags for c in "kclt") or any(
        w in ("--keep", "--stdout", "--to-stdout", "--list", "--test") for w in longs
    )
    if name == "zstd" and "--rm" not in longs:
        return  # zstd keeps its input unless told
    named = [w for w in operands(words) if w != "-"]
    if not keeps and named:
        found.programs.append(["rm", *named])


def git_removes(words: list[str], found: Hidden) -> None:
    """``git rm f`` deletes ``f`` (unless ``--cached``), ``git clean -f`` the untracked files:
    ``rm`` for a deny rule."""
    if len(words) < 2 or any(w in ("--cached", "-n", "--dry-run") for w in words):
        return
    if words[1] == "rm":
        found.programs.append(["rm", *operands(words)[1:]])
    elif words[1] == "clean":
        found.programs.append(["rm", "-r", *(operands(words)[1:] or ["."])])


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
    "zip": _zip,
    **dict.fromkeys(
        ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "lzma", "unlzma", "lzip", "zstd"), _compressor
    ),
    **dict.fromkeys(("grep", "egrep", "fgrep", "rgrep", "rg", "ag", "ack"), _grep),
    "unlink": _unlink,
    "shred": _shred,
}
