"""Permission modes, and what each allows when no rule decides.

* ``default`` - reads anywhere except sensitive places (``~/.ssh``, ``~/.aws``,
  ``~/.gnupg``, credential files, ``.env*``) ask; edits and writes inside the project are
  allowed, outside it (and to heron's own configuration, ``.git``) ask; bash runs.
* ``plan`` - read-only: edits and writes are denied; bash only for read-only commands.
* ``accept-edits`` - as default, and edits/writes outside the project are allowed too
  (heron's configuration, ``.git`` and the sensitive places still ask).
* ``bypass`` - everything runs; only deny rules still apply.
"""

from __future__ import annotations

from typing import Literal

Mode = Literal["default", "plan", "accept-edits", "bypass"]
MODES: tuple[Mode, ...] = ("default", "plan", "accept-edits", "bypass")
# Claude Code's spellings, so a settings file brought from there works.
_ALIASES: dict[str, Mode] = {
    "acceptedits": "accept-edits",
    "accept_edits": "accept-edits",
    "bypasspermissions": "bypass",
    "dontask": "bypass",
}


def parse_mode(text: str) -> Mode:
    """A mode from a flag or setting; raises ``ValueError`` naming the choices."""
    key = text.strip().lower()
    for mode in MODES:
        if key == mode:
            return mode
    if key in _ALIASES:
        return _ALIASES[key]
    raise ValueError(f"unknown permission mode {text!r}: use one of {', '.join(MODES)}")


def next_mode(mode: Mode) -> Mode:
    """Shift+Tab: default -> accept-edits -> plan -> default (bypass only on request)."""
    return {"default": "accept-edits", "accept-edits": "plan"}.get(mode, "default")  # type: ignore[return-value]


# Programs that only read, for plan mode, with the arguments that would make them write.
READ_ONLY_PROGRAMS = frozenset(
    {
        "ls",
        "cat",
        "head",
        "tail",
        "wc",
        "grep",
        "rg",
        "egrep",
        "fgrep",
        "pwd",
        "echo",
        "printf",
        "which",
        "type",
        "file",
        "stat",
        "tree",
        "du",
        "df",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "date",
        "true",
        "false",
        "test",
        "[",
        "diff",
        "cmp",
        "uniq",
        "cut",
        "tr",
        "nl",
        "sort",
        "find",
        "sed",
        "git",
        "jq",
        "whoami",
        "uname",
        "id",
        "hostname",
        "column",
        "comm",
        "md5sum",
        "sha256sum",
        "sha1sum",
        "cd",
        "less",
        "more",
        "fd",
    }
)
_WRITING_ARGS: dict[str, tuple[str, ...]] = {
    "find": ("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"),
    "sort": ("-o", "--output", "--compress-program"),
    "sed": ("-i", "--in-place"),
    "rg": ("--pre",),
    "fd": ("-x", "--exec", "-X", "--exec-batch"),
    "tree": ("-o",),
    "date": ("-s", "--set"),
}
_GIT_READ = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "ls-files",
        "rev-parse",
        "grep",
        "describe",
        "shortlog",
        "cat-file",
        "ls-tree",
        "reflog",
    }
)


def is_read_only(words: list[str]) -> bool:
    if not words:
        return True
    program = words[0].rsplit("/", 1)[-1]
    if program not in READ_ONLY_PROGRAMS:
        return False
    args = words[1:]
    if program == "git":
        rest = [a for a in args if not a.startswith("-")]
        if not rest or rest[0] not in _GIT_READ or "--output" in " ".join(args):
            return False
        if rest[0] == "grep" and any(a.startswith(("-O", "--open-files-in-pager")) for a in args):
            return False  # runs the program given as the pager
        return not (rest[0] == "reflog" and len(rest) > 1 and rest[1] in ("expire", "delete"))
    if program == "uniq" and len([a for a in args if not a.startswith("-")]) > 1:
        return False  # `uniq IN OUT` writes OUT
    if program == "hostname" and any(not a.startswith("-") for a in args):
        return False  # `hostname NAME` sets it
    if program == "sed" and not _sed_reads_only(args):
        return False
    for bad in _WRITING_ARGS.get(program, ()):
        if any(a == bad or a.startswith(bad + "=") or (bad == "-i" and a.startswith("-i")) for a in args):
            return False
    return True


def _sed_reads_only(args: list[str]) -> bool:
    """Whether sed's scripts only print: no ``w``/``W`` (write a file) or ``e`` (run a
    command) command or ``s///`` flag, and no script file (``-f``) the checker cannot see."""
    scripts: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-e", "--expression"):
            scripts.append(args[i + 1] if i + 1 < len(args) else "")
            i += 2
            continue
        if arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
        elif arg in ("-f", "--file") or arg.startswith("--file="):
            return False
        elif arg.startswith("-") and not arg.startswith("--") and "i" in arg:
            return False  # -i in a cluster (`-ni`, `-Ei`) edits in place too
        elif not arg.startswith("-") and not scripts:
            scripts.append(arg)  # the first operand is the script when no -e gave one
        i += 1
    return all(_sed_script_reads_only(script) for script in scripts)


def _sed_script_reads_only(script: str) -> bool:
    s, i, n = script, 0, len(script)
    while i < n:
        ch = s[i]
        if ch in " \t\n;{}!0123456789$,~+":
            i += 1
        elif ch in "/\\":  # an address /re/ or \cREc
            delim = s[i + 1] if ch == "\\" and i + 1 < n else "/"
            i = _sed_field_end(s, i + (2 if ch == "\\" else 1), delim)
        elif ch in "ewW":
            return False
        elif ch in "sy":
            if i + 1 >= n:
                return False
            delim = s[i + 1]
            i = _sed_field_end(s, _sed_field_end(s, i + 2, delim), delim)
            if ch == "s":
                start = i
                while i < n and s[i] not in ";\n}":
                    i += 1
                if any(flag in s[start:i] for flag in "ewW"):
                    return False
        elif ch in "aicrRbtT:#":
            while i < n and s[i] != "\n" and not (ch in "btT" and s[i] == ";"):
                i += 1
        else:
            i += 1
    return True


def _sed_field_end(s: str, i: int, delim: str) -> int:
    """Index just after the ``delim`` ending the field that starts at ``i``."""
    while i < len(s) and s[i] != delim:
        i += 2 if s[i] == "\\" else 1
    return i + 1
