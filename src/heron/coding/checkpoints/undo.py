"""A snapshot that fails takes back what it wrote.

A snapshot writes objects (one pack of new file contents, loose trees and a commit), the
shadow index (or dulwich's stat cache) and finally a ref. When a step fails half-way - the
disk is full, git is killed - what was written before is unreachable: nothing would ever
use it, a gc would only free it days later, and the index would already point at objects
of a snapshot that does not exist. So :class:`SnapshotUndo` notes, before a snapshot, which
object files exist and keeps the index and the stat cache aside; on failure it removes the
object files the snapshot added and git's temporary files, and puts the index and the
cache back. A repository the failed snapshot had just created is removed whole: a
half-made repository is what would otherwise fill the disk again as soon as space is
freed. Temporary files a killed snapshot left behind (``tmp_pack_*``, ``tmp_obj_*``, a
stale ``index.lock``) are removed before each snapshot, under the repository's lock.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

_KEPT_ASIDE = ("index", "heron-stat-cache.json")  # what a snapshot rewrites besides objects
_SUFFIX = ".heron-undo"


def _object_files(git_dir: Path) -> set[str]:
    found: set[str] = set()
    objects = git_dir / "objects"
    for root, _dirs, files in os.walk(objects):
        found.update(os.path.join(root, name) for name in files)
    return found


def sweep_temporaries(git_dir: Path) -> int:
    """Remove what an interrupted git or dulwich left: temporary packs and objects, a stale
    ``index.lock`` (the caller holds the repository's lock, so no snapshot is writing), and
    the copies this module keeps aside. Returns how many files went."""
    removed = 0
    candidates = [git_dir / "index.lock", *(git_dir / f"{name}{_SUFFIX}" for name in _KEPT_ASIDE)]
    for folder in (git_dir / "objects" / "pack", git_dir / "objects"):
        with contextlib.suppress(OSError):
            candidates += [p for p in folder.iterdir() if p.is_file() and p.name.startswith(("tmp", ".tmp"))]
    for root, _dirs, files in os.walk(git_dir / "objects"):
        candidates += [Path(root, name) for name in files if name.startswith("tmp_obj_")]
    for path in candidates:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            removed += 1
    return removed


class SnapshotUndo:
    """Taken before a snapshot writes anything; :meth:`rollback` if it fails, :meth:`done` if not."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = git_dir
        self.fresh = not (git_dir / "HEAD").exists()
        if self.fresh:
            self.objects: set[str] = set()
            return
        sweep_temporaries(git_dir)
        self.objects = _object_files(git_dir)
        for name in _KEPT_ASIDE:
            source, aside = git_dir / name, git_dir / f"{name}{_SUFFIX}"
            if not source.exists():
                continue
            try:
                if name == "index":  # git and dulwich replace the index by a rename: a link keeps the old one
                    os.link(source, aside)
                else:  # the stat cache is rewritten in place
                    shutil.copy2(source, aside)
            except OSError:
                shutil.copy2(source, aside)

    def done(self) -> None:
        for name in _KEPT_ASIDE:
            with contextlib.suppress(FileNotFoundError):
                (self.git_dir / f"{name}{_SUFFIX}").unlink()

    def rollback(self) -> None:
        """Remove what the snapshot added; never raises (the snapshot's own error is what counts)."""
        if self.fresh:
            shutil.rmtree(self.git_dir, ignore_errors=True)
            return
        for path in _object_files(self.git_dir) - self.objects:
            with contextlib.suppress(OSError):
                os.unlink(path)
        for name in _KEPT_ASIDE:
            target, aside = self.git_dir / name, self.git_dir / f"{name}{_SUFFIX}"
            with contextlib.suppress(OSError):
                if aside.exists():
                    os.replace(aside, target)
                elif target.exists():  # made by the failed snapshot
                    target.unlink()
        with contextlib.suppress(OSError):
            sweep_temporaries(self.git_dir)
