"""Pruning: snapshots older than ``checkpoints.keepDays`` (30 by default) are removed.

It runs at most once a day, when a session opens and the marker file
``$HERON_HOME/checkpoints/.last-prune`` is more than a day old. The check is one stat;
the work runs in a detached ``python -m heron.coding.checkpoints.prune`` process, so no
session waits for a gc and a short ``heron -p`` does not cut one off. Every project's
shadow repository is pruned, not only the open one: a project nobody opens any more
would otherwise keep its snapshots forever. Old refs are deleted and the objects only
they reached are gc'd at once, so the disk space really comes back; a repository left
with no snapshot is deleted whole. A new home writes the marker when its first repository
is made, so nothing runs until a day later.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from heron.coding.checkpoints.base import CheckpointError
from heron.coding.checkpoints.repo import PRUNE_MARKER, BackendName, ShadowRepo
from heron.session.private_files import UMASK, append_private, ensure_private_file

DEFAULT_KEEP_DAYS = 30
DAY = 86_400


@dataclass(frozen=True, slots=True)
class PruneReport:
    project: str
    removed: int
    kept: int
    error: str | None = None


def prune_due(home: Path, now: float | None = None) -> bool:
    root = home / "checkpoints"
    if not root.is_dir():
        return False
    try:
        last = (root / PRUNE_MARKER).stat().st_mtime
    except FileNotFoundError:
        return True  # repositories from before the marker existed
    return last < (now if now is not None else time.time()) - DAY


def schedule_prune(home: Path, keep_days: int) -> subprocess.Popen[bytes] | None:
    """Start the prune in the background if it is due (and mark it done for today)."""
    if not prune_due(home):
        return None
    marker = home / "checkpoints" / PRUNE_MARKER
    try:
        ensure_private_file(marker)
        os.utime(marker)
        log = os.fdopen(append_private(home / "checkpoints" / "prune.log"), "ab")
    except OSError:
        return None
    with log:
        return subprocess.Popen(
            [sys.executable, "-m", "heron.coding.checkpoints.prune", "--home", str(home), "--days", str(keep_days)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
            umask=UMASK,  # the git it runs writes in the shadow repositories
        )


def prune_all(
    home: Path, keep_days: int, now: float | None = None, backend: BackendName | None = None
) -> list[PruneReport]:
    """Prune every shadow repository under ``home``; one repository's failure is reported
    and the others are still pruned."""
    cutoff = (now if now is not None else time.time()) - keep_days * DAY
    reports = []
    root = home / "checkpoints"
    for git_dir in sorted(root.iterdir()) if root.is_dir() else []:
        if not (git_dir / "HEAD").exists():
            continue
        repo = ShadowRepo.from_dir(git_dir, home, backend)
        try:
            removed, kept = repo.prune(cutoff)
        except (CheckpointError, OSError) as exc:
            reports.append(PruneReport(str(repo.cwd), 0, 0, str(exc)))
            continue
        reports.append(PruneReport(str(repo.cwd), removed, kept))
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m heron.coding.checkpoints.prune",
        description="Remove heron's checkpoint snapshots older than --days.",
    )
    parser.add_argument("--home", required=True, help="the heron home (HERON_HOME)")
    parser.add_argument("--days", type=int, default=DEFAULT_KEEP_DAYS)
    args = parser.parse_args(argv)
    if args.days < 1:
        parser.error("--days must be at least 1")
    failed = False
    for report in prune_all(Path(args.home), args.days):
        if report.error:
            failed = True
            print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {report.project}: {report.error}", flush=True)
        elif report.removed:
            print(
                f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {report.project}: removed {report.removed} snapshot(s), "
                f"kept {report.kept}",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
