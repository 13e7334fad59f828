"""The other names of a file that has more than one (hard links).

A hard link is the same file under a second name: ``edit hl`` changes ``locked/f`` when
``hl`` and ``locked/f`` are one file, and no symlink tells (the edit and write tools write a
linked file in place, so that the links stay one file). A path rule is about the file, so
before a call writes (or reads) a file with several names, the engine looks for its other
names where they could matter - under the places the path rules name, the project, the
places the mode protects - and checks them as if the call named them. Only the kernel
knows every name of a file, and a search has to stop somewhere, so it is bounded; a search
that could not account for every name says so, and the engine asks rather than vouch for a
name it did not see (docs/permissions.md, "Hard links").
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

SEARCH_BUDGET = 20_000  # directory entries looked at for one file, over all the places searched


@dataclass(slots=True)
class Names:
    """What a search for the other names of one file found."""

    count: int  # how many names the file has (1: no other)
    found: list[Path] = field(default_factory=list)
    searched: bool = True  # every place was searched to its end (the budget did not run out)

    @property
    def all_found(self) -> bool:
        return len(self.found) >= self.count - 1


def other_names(path: Path, places: Iterable[Path], budget: int = SEARCH_BUDGET) -> Names:
    """The names other than ``path`` of the regular file ``path`` leads to, found under ``places``."""
    try:
        info = os.stat(path)
    except OSError:
        return Names(1)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
        return Names(1)
    names = Names(info.st_nlink)
    real = os.path.realpath(path)
    left = budget
    for place in _outermost(Path(os.path.realpath(p)) for p in places):
        left = _search(str(place), info, real, names, left)
        if left <= 0:
            names.searched = False
            break
        if names.all_found:
            break
    names.found = sorted(set(names.found))
    return names


def _outermost(places: Iterable[Path]) -> list[Path]:
    """The places, without those inside another one (searched with it)."""
    kept: list[Path] = []
    for place in sorted(set(places), key=lambda p: len(p.parts)):
        if not any(place.is_relative_to(outer) for outer in kept):
            kept.append(place)
    return kept


def _search(place: str, info: os.stat_result, real: str, names: Names, left: int) -> int:
    """Walk ``place`` (without following links or leaving the file's device); returns the budget left."""
    try:
        top = os.stat(place, follow_symlinks=False)
    except OSError:
        return left
    if stat.S_ISREG(top.st_mode):
        if (top.st_ino, top.st_dev) == (info.st_ino, info.st_dev) and place != real:
            names.found.append(Path(place))
        return left - 1
    if not stat.S_ISDIR(top.st_mode) or top.st_dev != info.st_dev:
        return left - 1
    pending = [place]
    while pending and left > 0:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            left -= 1
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.stat(follow_symlinks=False).st_dev == info.st_dev:
                        pending.append(entry.path)
                elif entry.inode() == info.st_ino and entry.path != real and _same_file(entry, info):
                    names.found.append(Path(entry.path))
            except OSError:
                continue
    return left if not pending else 0


def _same_file(entry: os.DirEntry[str], info: os.stat_result) -> bool:
    return entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_dev == info.st_dev
