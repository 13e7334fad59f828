"""Where the file tools take a text file from: the client's copy when a client holds the
files (an editor over ACP, ``ToolEnv.client_files``), else the disk.

An editor's buffer can differ from the disk (unsaved changes), and the model must see
what the user sees. Such text has no mtime of its own, so its version is a *content
stamp*: a hash of the bytes, stored where a disk read stores ``st_mtime_ns``. Stamps are
negative, so they never equal a real mtime; the read tool's "unchanged" answer, the
view's read index and edit's stale-read check then compare like with like: a repeated
read is "unchanged" only if the editor's text is the same, and an edit is refused only
if the text it is matched against changed since the model read it.

Images, binary files and directories are always read from disk: the client protocol
carries text only.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from heron.coding.tools.env import ToolEnv

SNIFF_BYTES = 8192


def content_stamp(data: bytes) -> int:
    """A version for text without an mtime: negative, 63 bits of a hash of the bytes."""
    digest = hashlib.blake2b(data, digest_size=8).digest()
    return -(int.from_bytes(digest, "big") >> 1) - 1


def is_content_stamp(mtime_ns: int) -> bool:
    return mtime_ns < 0


def unchanged_since_read(read_mtime_ns: int, read_size: int | None, info: os.stat_result, content: bytes) -> bool:
    """Whether the file is the version the model read: by content when that read came from
    a client's copy (a stamp), else by the file's mtime and size."""
    if is_content_stamp(read_mtime_ns):
        return (content_stamp(content), len(content)) == (read_mtime_ns, read_size)
    return (info.st_mtime_ns, info.st_size) == (read_mtime_ns, read_size)


@dataclass(frozen=True, slots=True)
class HeldText:
    """The text a client holds for a file, as the bytes the read tool pages through."""

    data: bytes

    def stat(self, disk: os.stat_result) -> os.stat_result:
        """The disk's stat with the held text's size and stamp in place of size and mtime."""
        fields = list(disk[:10])
        fields[6] = len(self.data)
        stamp = content_stamp(self.data)
        return os.stat_result(
            [*fields, disk.st_atime, disk.st_mtime, disk.st_ctime, disk.st_atime_ns, stamp, disk.st_ctime_ns]
        )

    def open(self) -> io.BufferedIOBase:
        return io.BytesIO(self.data)


async def held_text(env: ToolEnv, path: Path, is_text: Callable[[bytes], bool]) -> HeldText | None:
    """The client's text of ``path`` when there is a client, the file on disk is a regular
    file whose first bytes pass ``is_text``, and the client gives the text; else None, and
    the file is read from disk (which also gives the usual errors for a missing file)."""
    files = env.client_files
    if files is None or not await asyncio.to_thread(_text_on_disk, path, is_text):
        return None
    text = await files.read_text(path)
    return None if text is None else HeldText(text.encode("utf-8", "surrogatepass"))


def _text_on_disk(path: Path, is_text: Callable[[bytes], bool]) -> bool:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return is_text(f.read(SNIFF_BYTES))
    except OSError:
        return False
