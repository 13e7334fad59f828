"""A prompt too large for the window: saved to a file, the model gets its head and the path.

A 50 MB piped prompt must not become one 52 MB request (the provider rejects it, and the
session file would carry it on every resume). Over half the room the window leaves, the
text is written to the session's spill folder (0600 in a 0700 folder) and the message
keeps its first characters plus where to read the rest; the cut is a ledger record.
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path

from heron.context.records.ledger import LedgerRecord
from heron.session.private_files import open_private, private_dir

PROMPT_ROOM_SHARE = 0.5
PROMPT_PREVIEW_CHARS = 4_000


def fit_prompt(text: str, room_chars: int, spill_dir: Path) -> tuple[str, LedgerRecord | None]:
    """``text`` as it is when it fits, else its head and the file holding all of it."""
    if len(text) <= max(PROMPT_PREVIEW_CHARS * 2, int(room_chars * PROMPT_ROOM_SHARE)):
        return text, None
    private_dir(spill_dir, narrow=True)
    path = spill_dir / f"prompt-{_dt.datetime.now().strftime('%Y%m%dT%H%M%S%f')}.txt"
    fd = open_private(path)
    with os.fdopen(fd, "w", encoding="utf-8", errors="replace") as f:
        f.write(text)
    record = LedgerRecord(
        kind="spill",
        chars_before=len(text),
        chars_after=PROMPT_PREVIEW_CHARS,
        recover=f"read {path} with offset/limit",
        detail={"prompt": True, "path": str(path)},
    )
    fitted = (
        f"{text[:PROMPT_PREVIEW_CHARS]}\n\n[This message is {len(text):,} characters, too large for the "
        f"context window; the whole message is saved in {path}. Read it with offset/limit, or grep it.]"
    )
    return fitted, record
