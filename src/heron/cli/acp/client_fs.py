"""The editor's files for heron's read, write and edit tools: ACP ``fs/read_text_file``
and ``fs/write_text_file``, used when the client offers them (``ToolEnv.client_files``).

Used only when the client can write: reading the editor's buffer (with unsaved changes)
and then writing to disk would save those changes behind the user's back. A client that
cannot read (or does not hold a file) leaves read and edit to read the file from disk.
Failures of the client's writes become tool errors the model sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from heron.agent.tools import ToolError


class EditorFiles:
    def __init__(self, conn: Any, session_id: str, *, can_read: bool) -> None:
        self.conn = conn
        self.session_id = session_id
        self.can_read = can_read

    async def read_text(self, path: Path) -> str | None:
        if not self.can_read:
            return None
        try:
            response = await self.conn.read_text_file(session_id=self.session_id, path=str(path))
        except Exception:  # noqa: BLE001 - the editor does not have it (or failed): the file on disk is used
            return None
        content = getattr(response, "content", None)
        return content if isinstance(content, str) else None

    async def write_text(self, path: Path, text: str) -> None:
        try:
            await self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text)
        except Exception as exc:
            raise ToolError(f"The editor could not write {path}: {_message(exc)}. Nothing was changed.") from exc


def _message(exc: Exception) -> str:
    data = getattr(exc, "data", None)
    message = data.get("message") if isinstance(data, dict) else None
    if isinstance(message, str):
        return message
    return str(exc) or type(exc).__name__


def attach(session: Any, conn: Any, session_id: str, capabilities: Any) -> bool:
    """Give the session's tools the editor's files when the client offers writing."""
    fs = getattr(capabilities, "fs", None)
    if fs is None or not fs.write_text_file:
        return False
    session.env.client_files = EditorFiles(conn, session_id, can_read=bool(fs.read_text_file))
    return True
