"""``heron rewind``: put code, conversation or both back to right before user turn N.

Code comes from the checkpoint heron took before that turn (``heron.coding.checkpoints``);
the conversation moves the session's leaf to just before the turn's message, as the tree
does, so the turns after it stay in the file as a branch. What would change is listed
first; ``--dry-run`` stops there, ``--yes`` applies without asking. Files changed outside
heron since its last snapshot are named and kept unless ``--include-external``. The tree
as it was is snapshotted before anything is restored, so a rewind can itself be undone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from heron.ai.models import heron_home
from heron.cli.terminal_text import visible
from heron.coding.checkpoints import (
    Change,
    CheckpointError,
    ShadowRepo,
    Turn,
    plan_code_rewind,
    rewind_conversation,
    turns,
)
from heron.coding.settings import load_settings
from heron.session.paths import latest_session, resolve_session
from heron.session.store import SessionError, SessionStore


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="heron rewind", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--session", default=None, metavar="PATH|ID", help="the session (default: the newest of this directory)"
    )
    parser.add_argument(
        "--to",
        type=int,
        default=None,
        metavar="N",
        help="the user turn to go back to, from 1 (without it: list the turns)",
    )
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--code", dest="what", action="store_const", const="code", help="restore files only")
    what.add_argument(
        "--conversation", dest="what", action="store_const", const="conversation", help="move the conversation only"
    )
    what.add_argument("--both", dest="what", action="store_const", const="both", help="both (the default)")
    parser.add_argument("--dry-run", action="store_true", help="list what would change, change nothing")
    parser.add_argument("--yes", action="store_true", help="apply without asking (scripts)")
    parser.add_argument(
        "--include-external",
        action="store_true",
        help="also restore files changed outside heron since its last snapshot",
    )
    parser.add_argument("--cwd", default=None, help="the project directory (default: the current one)")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _run(args)
    except (SessionError, CheckpointError, LookupError, OSError) as exc:
        print(f"heron rewind: {exc}", file=sys.stderr)
        return 1


def _open(args: argparse.Namespace, cwd: Path, home: Path) -> SessionStore:
    if args.session:
        return SessionStore.open(resolve_session(args.session, home=home))
    newest = latest_session(cwd, home=home)
    if newest is None:
        raise LookupError(f"no sessions for {cwd}; give one with --session")
    return SessionStore.open(newest)


def open_repo(store: SessionStore, cwd: Path, home: Path) -> ShadowRepo:
    """The shadow repository of the session's project (its header's cwd, else ``cwd``)."""
    return ShadowRepo(Path(store.header.cwd) if store.header and store.header.cwd else cwd, home)


def find_turns(store: SessionStore, repo: ShadowRepo) -> list[Turn]:
    """The user turns of the current branch, each with its checkpoint when there is one."""
    return turns(store, repo.before_turn_index(store.session_id) if repo.available else {})


def applied_changes(changes: list[Change], include_external: bool) -> list[Change]:
    """The changes a rewind makes: not the kept files, and files changed outside heron
    only when asked."""
    return [c for c in changes if c.action != "keep" and (not c.external or include_external)]


def apply_rewind(store: SessionStore, repo: ShadowRepo, turn: Turn, what: str, applied: list[Change]) -> None:
    """Restore ``applied`` from the turn's checkpoint and/or move the conversation."""
    if applied:
        assert turn.checkpoint is not None
        repo.restore(turn.checkpoint, applied)
    if what in ("conversation", "both"):
        rewind_conversation(store, turn, {"toTurn": turn.number, "code": what != "conversation"})


def _run(args: argparse.Namespace) -> int:
    cwd = Path(args.cwd).expanduser().resolve() if args.cwd else Path.cwd().resolve()
    home = heron_home()
    store = _open(args, cwd, home)
    repo = open_repo(store, cwd, home)
    found = find_turns(store, repo)
    keep_days = load_settings(cwd, home).checkpoint_keep_days
    if args.to is None:
        print(visible("\n".join(turn_lines(found, keep_days))))
        return 0
    if not 1 <= args.to <= len(found):
        print(
            f"heron rewind: --to {args.to}: the session has {len(found)} user turn(s) on this branch "
            "(run heron rewind without --to to list them)",
            file=sys.stderr,
        )
        return 2
    turn = found[args.to - 1]
    what = args.what or "both"
    changes: list[Change] = []
    if what in ("code", "both"):
        if turn.checkpoint is None:
            print(
                f"heron rewind: {missing_reason(turn, keep_days)}, so its code cannot be restored; use --conversation",
                file=sys.stderr,
            )
            return 1
        _, changes = plan_code_rewind(repo, turn.checkpoint)
    applied = applied_changes(changes, args.include_external)
    print(visible("\n".join(describe_lines(turn, what, changes, applied))))
    if args.dry_run:
        return 0
    if not args.yes and not _confirm():
        print("heron rewind: nothing changed", file=sys.stderr)
        return 1
    apply_rewind(store, repo, turn, what, applied)
    print(
        f"rewound to before turn {turn.number}: {len(applied)} file(s) restored"
        + (", conversation moved" if what != "code" else "")
    )
    return 0


def _pruned(turn: Turn, keep_days: int) -> bool:
    age = turn.age_days()
    return turn.checkpoint is None and age is not None and age > keep_days


def missing_reason(turn: Turn, keep_days: int) -> str:
    """Why a turn has no snapshot: pruned for its age, or never taken."""
    if _pruned(turn, keep_days):
        return (
            f"the snapshot of turn {turn.number} is gone: it was pruned, because snapshots are kept "
            f"{keep_days} days (checkpoints.keepDays) and this turn is {int(turn.age_days() or 0)} days old"
        )
    return f"turn {turn.number} has no checkpoint (taken by heron before each turn)"


def turn_lines(found: list[Turn], keep_days: int) -> list[str]:
    """The numbered turn list (``heron rewind`` without ``--to``, ``/rewind``)."""
    if not found:
        return ["no user turns on this branch"]
    lines = []
    for turn in found:
        mark = (
            ""
            if turn.checkpoint
            else (
                f"  (snapshot pruned after {keep_days} days: conversation only)"
                if _pruned(turn, keep_days)
                else "  (no checkpoint: conversation only)"
            )
        )
        first = (turn.text.strip().splitlines() or [""])[0][:70]
        lines.append(f"{turn.number:>3}. {first}{mark}")
    return lines


def describe_lines(turn: Turn, what: str, changes: list[Change], applied: list[Change]) -> list[str]:
    """What a rewind would change, one file a line (``--dry-run`` prints exactly this)."""
    first = (turn.text.strip().splitlines() or [""])[0][:70]
    lines = [f"rewind to before turn {turn.number} ({what}): {first}"]
    if what == "conversation":
        return lines
    if not changes:
        lines.append("  no files differ from the checkpoint")
    for change in changes:
        verb = {"restore": "restore", "delete": "delete ", "keep": "keep   "}[change.action]
        note = "  (not in the current snapshot: over 2 MB or ignored; left as it is)" if change.action == "keep" else ""
        if change.external and change.action != "keep":
            note = (
                "  (changed outside heron; "
                + ("restored" if change in applied else "kept: --include-external restores it")
                + ")"
            )
        lines.append(f"  {verb} {change.path}{note}")
    return lines


def _confirm() -> bool:
    if not sys.stdin.isatty():
        print("heron rewind: not a terminal; pass --yes to apply, or --dry-run to only list", file=sys.stderr)
        return False
    return input("apply? [y/N] ").strip().lower() in ("y", "yes")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
