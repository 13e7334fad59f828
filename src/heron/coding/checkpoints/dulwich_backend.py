"""The shadow repository through dulwich, for machines without the ``git`` command.

It writes the same objects and refs the git backend does (a bare repository: the project
is walked here, not through a git work tree), so either backend reads the other's
snapshots. Ignored files follow the project's ``.gitignore`` files and the user's global
ignore file, through dulwich's gitignore matcher. A small stat cache in the shadow
repository (``heron-stat-cache.json``) saves re-reading unchanged files, the job git's
index does for the git backend. dulwich is imported only when this backend is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from dulwich.config import StackedConfig
from dulwich.diff_tree import tree_changes
from dulwich.gc import garbage_collect
from dulwich.ignore import IgnoreFilter, IgnoreFilterManager, default_user_ignore_filter_path
from dulwich.object_store import tree_lookup_path
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from heron.coding.checkpoints.base import (
    LEGACY_REF,
    MAX_FILE_BYTES,
    MAX_FILES,
    SNAPSHOT_PREFIX,
    CheckpointError,
    SnapshotInfo,
    commit_time,
    path_bytes,
    path_str,
)
from heron.session.private_files import write_private_text

IDENTITY = b"heron <heron@localhost>"
CACHE = "heron-stat-cache.json"
GITLINK = 0o160000
_STATUS = {"add": "A", "delete": "D", "modify": "M"}


class DulwichBackend:
    name = "dulwich"

    def __init__(self, git_dir: Path, cwd: Path, exclude: list[str] | None = None) -> None:
        self.git_dir, self.cwd = git_dir, cwd
        self.exclude = exclude or []  # gitignore patterns besides the project's (base.exclude_patterns)
        self._repo: Repo | None = None

    @property
    def repo(self) -> Repo:
        if self._repo is None:
            self._repo = Repo(str(self.git_dir))
        return self._repo

    def init(self) -> None:
        self._repo = Repo.init_bare(str(self.git_dir))

    def _ignores(self) -> IgnoreFilterManager:
        # in git's order: the project's .gitignore files, then info/exclude (these), then the user's file
        filters: list[IgnoreFilter] = [IgnoreFilter([path_bytes(p) for p in self.exclude])]
        with contextlib.suppress(Exception):  # an unreadable global config only loses the global ignore file
            user = default_user_ignore_filter_path(StackedConfig.default())
            if os.path.isfile(user):
                filters.append(IgnoreFilter.from_path(user))
        return IgnoreFilterManager(str(self.cwd), filters, False)

    def _walk(self) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
        """(path, lstat) of every file to store, and the large ones left out."""
        ignores, files, large = self._ignores(), [], []
        for top, dirs, names in os.walk(self.cwd):
            rel = os.path.relpath(top, self.cwd)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            keep_dirs = []
            for name in dirs:
                full = os.path.join(top, name)
                if os.path.islink(full):
                    names.append(name)  # a link to a directory is stored as a link
                elif (
                    name != ".git"
                    and not os.path.exists(os.path.join(full, ".git"))
                    and not (
                        ignores.is_ignored(prefix + name + "/") and ignores.may_prune_directory(prefix + name + "/")
                    )
                ):
                    keep_dirs.append(name)
            dirs[:] = keep_dirs
            for name in names:
                path = prefix + name
                if name == ".git" or ignores.is_ignored(path):  # a .git file: a worktree's or submodule's link
                    continue
                try:
                    st = os.lstat(os.path.join(top, name))
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and st.st_size > MAX_FILE_BYTES:
                    large.append(path)
                elif stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    files.append((path, st))
            if len(files) > MAX_FILES:
                raise CheckpointError(f"{self.cwd} holds over {MAX_FILES:,} files; no snapshot taken")
        return files, large

    def write_tree(self) -> tuple[str, list[str]]:
        files, large = self._walk()
        store = self.repo.object_store
        cache_path = self.git_dir / CACHE
        try:
            cache: dict[str, Any] = json.loads(cache_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            cache = {}
        fresh: dict[str, Any] = {}
        root: dict[str, Any] = {}
        for path, st in files:
            key = [st.st_mtime_ns, st.st_size, st.st_ino, st.st_mode]
            hit = cache.get(path)
            if hit and hit[:4] == key and hit[4].encode() in store:
                sha = hit[4].encode()
            else:
                full = self.cwd / path
                try:
                    data = path_bytes(os.readlink(full)) if stat.S_ISLNK(st.st_mode) else full.read_bytes()
                except OSError:
                    continue  # gone or unreadable since the walk: left out, as git add --ignore-errors does
                blob = Blob.from_string(data)
                store.add_object(blob)
                sha = blob.id
            fresh[path] = [*key, sha.decode()]
            node = root
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = (_mode(st), sha)
        tree = self._store_tree(root)
        write_private_text(cache_path, json.dumps(fresh), errors="surrogateescape")
        return tree.decode(), large

    def _store_tree(self, node: dict[str, Any]) -> ObjectID:
        tree = Tree()
        for name, value in node.items():
            if isinstance(value, dict):
                tree.add(path_bytes(name), stat.S_IFDIR, self._store_tree(value))
            else:
                tree.add(path_bytes(name), value[0], value[1])
        self.repo.object_store.add_object(tree)
        return tree.id

    def commit(self, tree: str, message: str, when: int | None = None) -> str:
        seconds, offset = (when, 0) if when else commit_time()
        commit = Commit()
        commit.tree = ObjectID(tree.encode())
        commit.parents = []
        commit.author = commit.committer = IDENTITY
        commit.author_time = commit.commit_time = seconds
        commit.author_timezone = commit.commit_timezone = offset
        commit.encoding = b"UTF-8"
        commit.message = message.encode("utf-8")
        self.repo.object_store.add_object(commit)
        return commit.id.decode()

    def set_ref(self, ref: str, commit: str) -> None:
        self.repo.refs[Ref(ref.encode())] = ObjectID(commit.encode())

    def delete_refs(self, refs: list[str]) -> None:
        for ref in refs:
            self.repo.refs.remove_if_equals(Ref(ref.encode()), None)

    def snapshots(self) -> list[SnapshotInfo]:
        found = []
        for ref in self.repo.refs.keys(base=Ref(SNAPSHOT_PREFIX.encode())):
            name = Ref(SNAPSHOT_PREFIX.encode() + ref)
            commit = self.repo[self.repo.refs[name]]
            assert isinstance(commit, Commit)
            found.append(
                SnapshotInfo(
                    name.decode(), commit.id.decode(), commit.commit_time, commit.message.decode("utf-8", "replace")
                )
            )
        return found + [info for info, _ in self.legacy()]

    def legacy(self) -> list[tuple[SnapshotInfo, str]]:
        try:
            sha: ObjectID | None = self.repo.refs[Ref(LEGACY_REF.encode())]
        except KeyError:
            sha = None
        found = []
        while sha is not None:
            commit = self.repo[sha]
            assert isinstance(commit, Commit)
            found.append(
                (
                    SnapshotInfo(
                        None, commit.id.decode(), commit.commit_time, commit.message.decode("utf-8", "replace")
                    ),
                    commit.tree.decode(),
                )
            )
            sha = commit.parents[0] if commit.parents else None
        return found

    def drop_legacy(self) -> None:
        self.repo.refs.remove_if_equals(Ref(LEGACY_REF.encode()), None)

    def diff(self, old: str, new: str) -> list[tuple[str, str]]:
        trees = [self._tree_of(old), self._tree_of(new)]
        out = []
        for change in tree_changes(self.repo.object_store, trees[0], trees[1], change_type_same=True):
            entry = change.new if change.type == "add" else change.old
            if change.type in _STATUS and entry is not None and entry.path is not None:
                out.append((_STATUS[change.type], path_str(entry.path)))
        return out

    def _tree_of(self, commit: str) -> ObjectID:
        obj = self.repo[ObjectID(commit.encode())]
        if not isinstance(obj, Commit):
            raise CheckpointError(f"{commit} is not a snapshot")
        return ObjectID(obj.tree)

    def checkout(self, commit: str, paths: list[str]) -> None:
        tree = self._tree_of(commit)
        for path in paths:
            mode, sha = tree_lookup_path(self.repo.object_store.__getitem__, tree, path_bytes(path))
            if stat.S_IFMT(mode) == GITLINK:
                continue  # a nested repository the git backend recorded: its content is not in the snapshot
            blob = self.repo[sha]
            assert isinstance(blob, Blob)
            target = self.cwd / path
            if target.is_dir() and not target.is_symlink():
                with contextlib.suppress(OSError):
                    target.rmdir()  # emptied by the deletes that ran first; a full one makes the write fail
            elif os.path.lexists(target):
                target.unlink()
            target.parent.mkdir(parents=True, exist_ok=True)
            if stat.S_ISLNK(mode):
                os.symlink(path_str(blob.data), target)
            else:
                target.write_bytes(blob.data)
                os.chmod(target, 0o755 if mode & 0o111 else 0o644)

    def gc(self) -> None:
        garbage_collect(self.repo, prune=True, grace_period=None)


def _mode(st: os.stat_result) -> int:
    if stat.S_ISLNK(st.st_mode):
        return stat.S_IFLNK
    return 0o100755 if st.st_mode & 0o100 else 0o100644
