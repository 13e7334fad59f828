"""The shadow repository through the ``git`` command.

``GIT_DIR`` is the shadow repository and ``GIT_WORK_TREE`` the project, so the project's own
repository, index and status are never touched. The shadow repository's own index keeps
git's stat cache, so a snapshot of an unchanged tree re-reads nothing. Hooks and LFS
filters are switched off: a snapshot must store the bytes on disk and run nothing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from heron.coding.checkpoints.base import (
    LEGACY_REF,
    MAX_FILES,
    SNAPSHOT_PREFIX,
    CheckpointError,
    SnapshotInfo,
    escape_pattern,
    is_large,
    path_bytes,
    path_str,
)
from heron.session.private_files import UMASK, private_dir, write_private_text

# The first snapshot of a large tree hashes every file; killed half-way, it would start over on
# every turn. It runs alongside the turn, so a long bound costs a turn nothing.
GIT_TIMEOUT = 900.0
NO_SPACE = "No space left on device"
_CONFIG = [
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "filter.lfs.clean=cat",
    "-c",
    "filter.lfs.smudge=cat",
    "-c",
    "filter.lfs.process=",
    "-c",
    "filter.lfs.required=false",
    "-c",
    "gc.auto=0",
]


def _write(path: Path, text: str) -> None:
    write_private_text(path, text, errors="surrogateescape")


def _index_entries(index: Path) -> int:
    """How many files the shadow index holds (its header's count; 0 before the first snapshot)."""
    try:
        with open(index, "rb") as handle:
            header = handle.read(12)
    except OSError:
        return 0
    return int.from_bytes(header[8:12], "big") if len(header) == 12 and header[:4] == b"DIRC" else 0


class GitBackend:
    name = "git"

    def __init__(self, git: str, git_dir: Path, cwd: Path, exclude: list[str] | None = None) -> None:
        self.git, self.git_dir, self.cwd = git, git_dir, cwd
        # A snapshot runs alongside the turn's request: at a lower priority, it gives way to it
        # on a busy machine (and costs nothing on an idle one).
        nice = shutil.which("nice")
        self.command = [nice, "-n", "10", git] if nice else [git]
        self.exclude = exclude or []  # gitignore patterns besides the project's (base.exclude_patterns)

    def _env(self) -> dict[str, str]:
        keep = {
            k: v
            for k, v in os.environ.items()
            if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "USER", "GIT_COMMITTER_DATE")
        }
        return {
            **keep,
            "GIT_DIR": str(self.git_dir),
            "GIT_WORK_TREE": str(self.cwd),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_AUTHOR_NAME": "heron",
            "GIT_AUTHOR_EMAIL": "heron@localhost",
            "GIT_COMMITTER_NAME": "heron",
            "GIT_COMMITTER_EMAIL": "heron@localhost",
            "GIT_TERMINAL_PROMPT": "0",
        }

    def run(
        self, *args: str, stdin: bytes | None = None, check: bool = True, env: dict[str, str] | None = None
    ) -> bytes:
        try:
            done = subprocess.run(
                [*self.command, *_CONFIG, *args],
                input=stdin,
                capture_output=True,
                env={**self._env(), **(env or {})},
                cwd=self.cwd,
                timeout=GIT_TIMEOUT,
                check=False,
                umask=UMASK,  # what git writes in the shadow repository is private
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise CheckpointError(f"git {args[0]}: {exc}") from exc
        errors = done.stderr.decode(errors="replace").strip()
        # ``add --ignore-errors`` runs unchecked (an unreadable file is skipped), but a full disk
        # is not a file to skip: the snapshot would hold part of the tree
        if done.returncode != 0 and (check or NO_SPACE in errors):
            raise CheckpointError(f"git {args[0]} failed: {errors}")
        return done.stdout

    def init(self) -> None:
        self.run("init", "-q", "--template=")  # no sample hooks: nothing to run, nothing executable

    def write_tree(self) -> tuple[str, list[str]]:
        """Stat-only when nothing changed: one ``ls-files`` lists what differs from the shadow
        index (kept between snapshots), and only those paths are checked for size; the index
        is rewritten only when something changed, and ``write-tree`` reuses its cached trees."""
        exclude = self.git_dir / "info" / "exclude"
        private_dir(exclude.parent)
        try:
            previous = exclude.read_text(encoding="utf-8", errors="surrogateescape")
        except OSError:
            previous = None
        static = "".join(f"{pattern}\n" for pattern in self.exclude)
        _write(exclude, static)  # last time's large files are listed again, to be looked at anew
        listed = self.run("ls-files", "-z", "-t", "--modified", "--others", "--exclude-standard").split(b"\0")
        changed = [(raw[:1], path_str(raw[2:])) for raw in listed if raw]
        if _index_entries(self.git_dir / "index") + sum(tag == b"?" for tag, _ in changed) > MAX_FILES:
            raise CheckpointError(f"{self.cwd} holds over {MAX_FILES:,} files; no snapshot taken")
        large = [path for _, path in changed if is_large(self.cwd, path)]
        wanted = static + "".join(f"/{escape_pattern(p)}\n" for p in large)
        _write(exclude, wanted)
        if len(changed) > len(large) or wanted != previous:
            # Files in the shadow index that are large now or ignored since: git would keep them.
            dropped = [
                raw
                for raw in self.run("ls-files", "-z", "--cached", "--ignored", "--exclude-standard").split(b"\0")
                if raw
            ]
            if dropped:
                self.run("update-index", "--force-remove", "-z", "--stdin", stdin=b"\0".join(dropped))
            # every new blob streamed into one pack per snapshot instead of a loose file each
            # (thousands of files for a first snapshot); gc's own delta rules are left as they are
            self.run("-c", "core.bigFileThreshold=1", "add", "-A", "--ignore-errors", check=False)
        return self.run("write-tree").decode().strip(), large

    def commit(self, tree: str, message: str, when: int | None = None) -> str:
        env = {"GIT_COMMITTER_DATE": f"@{when} +0000", "GIT_AUTHOR_DATE": f"@{when} +0000"} if when else None
        return self.run("commit-tree", tree, "-m", message, env=env).decode().strip()

    def set_ref(self, ref: str, commit: str) -> None:
        self.run("update-ref", ref, commit)

    def delete_refs(self, refs: list[str]) -> None:
        if refs:
            self.run("update-ref", "--stdin", "-z", stdin=b"".join(b"delete " + path_bytes(r) + b"\0\0" for r in refs))

    def snapshots(self) -> list[SnapshotInfo]:
        out = self.run(
            "for-each-ref",
            "--format=%(refname)%00%(objectname)%00%(committerdate:unix)%00%(contents)%01",
            SNAPSHOT_PREFIX,
        )
        found = []
        for record in out.decode("utf-8", "replace").split("\x01"):
            parts = record.lstrip("\n").split("\0")
            if len(parts) == 4:
                found.append(SnapshotInfo(parts[0], parts[1], int(parts[2] or 0), parts[3]))
        return found + [info for info, _ in self.legacy()]

    def legacy(self) -> list[tuple[SnapshotInfo, str]]:
        if not self.run("rev-parse", "-q", "--verify", LEGACY_REF, check=False).strip():
            return []
        out = self.run("log", "--format=%H%x00%T%x00%ct%x00%B%x01", LEGACY_REF).decode("utf-8", "replace")
        found = []
        for record in out.split("\x01"):
            parts = record.lstrip("\n").split("\0")
            if len(parts) == 4:
                found.append((SnapshotInfo(None, parts[0], int(parts[2] or 0), parts[3]), parts[1]))
        return found

    def drop_legacy(self) -> None:
        self.run("update-ref", "-d", LEGACY_REF, check=False)

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        out = self.run("diff-tree", "-r", "-z", "--no-renames", "--name-status", old, new).split(b"\0")
        items = [path_str(x) for x in out if x]
        return [(items[i], items[i + 1]) for i in range(0, len(items) - 1, 2)]

    def checkout(self, commit: str, paths: list[str]) -> None:
        if paths:
            self.run(
                "checkout",
                commit,
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
                stdin=b"\0".join(path_bytes(p) for p in paths),
            )

    def gc(self) -> None:
        self.run("reflog", "expire", "--expire=now", "--all", check=False)
        self.run("gc", "-q", "--prune=now")
