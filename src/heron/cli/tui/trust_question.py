"""The interactive "Trust this project?" question, asked once at start.

A repository can bring things that run code or widen permissions: hooks and allow rules
in ``.heron/settings.json`` / ``.heron/settings.local.json``, Python extensions in
``.heron/extensions/``, MCP servers in ``.mcp.json``. They stay off until the user
trusts the project. In the interactive mode heron asks before it builds the session (so
servers and extensions start only after a yes); a yes is remembered in the trust store,
a no is not - the next start asks again, as Claude Code does. ``--trust`` skips the
question, and without a terminal nothing is asked (the project stays untrusted).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from heron.coding.permissions.scopes import load_scopes
from heron.coding.permissions.trust import is_trusted, remember_trust

WIDENING_MODES = ("bypass", "accept-edits", "acceptedits", "accept_edits", "bypasspermissions", "dontask")


def trust_reasons(cwd: Path, home: Path) -> list[str]:
    """What in the project would take effect only once it is trusted (empty: nothing)."""
    reasons: list[str] = []
    for scope in load_scopes(cwd, home):
        if scope.name == "user":
            continue
        where = f".heron/{scope.path.name}"
        data = scope.data
        if data.get("hooks"):
            reasons.append(f"hooks in {where}")
        permissions = data.get("permissions")
        if isinstance(permissions, dict):
            if permissions.get("allow"):
                reasons.append(f"allow rules in {where}")
            mode = permissions.get("defaultMode")
            if isinstance(mode, str) and mode.strip().lower() in WIDENING_MODES:
                reasons.append(f"defaultMode {mode} in {where}")
        env = data.get("env")
        if isinstance(env, dict) and env.get("passThrough"):
            reasons.append(f"env.passThrough in {where}")
    extensions = _extension_files(cwd / ".heron" / "extensions")
    if extensions:
        reasons.append(f"Python extensions in .heron/extensions/ ({', '.join(extensions)})")
    from heron.coding.mcp.config import load_config

    skipped = load_config(cwd, home, trusted=False).skipped_untrusted
    if skipped:
        reasons.append(f"MCP servers in .mcp.json ({', '.join(skipped)})")
    return reasons


def _extension_files(directory: Path) -> list[str]:
    """The files the extension loader would load from ``directory`` (``_*.py`` are helpers)."""
    try:
        return sorted(p.name for p in directory.glob("*.py") if p.is_file() and not p.name.startswith("_"))
    except OSError:
        return []


def ask_trust(
    cwd: Path, home: Path, read: Callable[[str], str] = input, write: Callable[[str], None] = print
) -> bool | None:
    """Ask when the project is untrusted and has something that needs trust. True: yes
    (remembered); False: no (not remembered); None: nothing to ask."""
    if is_trusted(cwd, home):
        return None
    reasons = trust_reasons(cwd, home)
    if not reasons:
        return None
    write(f"This project ({cwd}) has settings that run commands or widen what heron may do:")
    for reason in reasons:
        write(f"  - {reason}")
    write("They stay off unless you trust the project. Only trust a project you know.")
    try:
        answer = read("Trust this project? [y/N] ").strip().lower()
    except (EOFError, KeyboardInterrupt):
        answer = ""
    if answer in ("y", "yes"):
        remember_trust(cwd, home)
        write(f"trusted: remembered in {home / 'trusted-projects.json'}")
        return True
    write(
        "not trusted: the project's hooks, allow rules, extensions and MCP servers stay off this session "
        "(asked again next start; --trust for scripts)"
    )
    return False


def maybe_ask_trust(cwd: Path, home: Path, flag: bool) -> None:
    """The interactive mode's start: ask on a terminal unless ``--trust`` was given."""
    if flag or not (_isatty(sys.stdin) and _isatty(sys.stdout)):
        return
    try:
        ask_trust(cwd, home)
    except OSError as exc:  # the trust store could not be written: say so, go on untrusted
        print(f"heron: warning: could not remember the trust decision: {exc}", file=sys.stderr)


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False
