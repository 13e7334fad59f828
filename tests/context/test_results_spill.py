"""Spill files: capped (head and tail kept), private, and removed after the retention time."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from heron.ai.types import TextContent, ToolResultMessage
from heron.context.tool_output.limits import ToolLimits
from heron.context.tool_output.results import apply_turn_budget
from heron.context.tool_output.spill import CappedSpill, remove_old_spills


def result(call_id: str, body: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="bash", content=[TextContent(text=body)])


def test_a_budget_spill_is_private_and_capped_with_head_and_tail(tmp_path: Path) -> None:
    spill_dir = tmp_path / "home" / "tool-output" / "s1"
    body = "".join(f"line {i}\n" for i in range(100_000))  # 988,890 bytes
    [out], [outcome] = apply_turn_budget([result("c1", body)], ToolLimits(), spill_dir, max_spill_bytes=100_000)
    assert outcome.spill_path is not None
    path = Path(outcome.spill_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(spill_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(spill_dir.parent.stat().st_mode) == 0o700
    data = path.read_bytes()
    assert len(data) <= 100_000 + 200
    assert data.startswith(b"line 0\nline 1\n") and data.endswith(b"line 99999\n")
    assert b"left out here: this file is capped at 100,000 bytes" in data
    assert "capped:" in out.text() and "bytes from its middle were left out" in out.text()
    assert sorted(p.name for p in spill_dir.iterdir()) == [path.name]  # no segments or temp files


def test_output_under_the_cap_is_kept_whole(tmp_path: Path) -> None:
    spill = CappedSpill(tmp_path / "a.log", max_bytes=1000)
    for _ in range(10):
        spill.write(b"x" * 99 + b"\n")
    spill.close()
    assert (tmp_path / "a.log").read_bytes() == (b"x" * 99 + b"\n") * 10
    assert not spill.capped


def test_a_capped_stream_keeps_its_start_and_its_end(tmp_path: Path) -> None:
    spill = CappedSpill(tmp_path / "a.log", max_bytes=1000)
    lines = [f"{i:05d}\n".encode() for i in range(10_000)]  # 60,000 bytes
    for line in lines:
        spill.write(line)
    spill.close()
    data = (tmp_path / "a.log").read_bytes()
    head, _, rest = data.partition(b"\n[... ")
    _, _, tail = rest.partition(b"...]\n")
    assert b"".join(lines).startswith(head) and len(head) == 500
    assert b"".join(lines).endswith(tail) and 250 <= len(tail) <= 500
    assert spill.omitted_bytes == 60_000 - len(head) - len(tail)
    assert spill.omitted_lines == b"".join(lines)[len(head) : 60_000 - len(tail)].count(b"\n")


def test_old_spills_are_removed_at_start_up_and_recent_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "tool-output"
    old_session, mixed = root / "old", root / "mixed"
    old_session.mkdir(parents=True)
    mixed.mkdir()
    day = 86_400
    now = time.time()
    for path, age in ((old_session / "a.txt", 20), (mixed / "b.log", 15), (mixed / "c.log", 2)):
        path.write_text("x")
        os.utime(path, (now - age * day, now - age * day))
    assert remove_old_spills(root, retention_days=14, now=now) == 2
    assert not old_session.exists()  # emptied: removed with its last file
    assert [p.name for p in mixed.iterdir()] == ["c.log"]
    assert remove_old_spills(tmp_path / "missing") == 0  # nothing to clean is not an error
