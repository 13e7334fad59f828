"""``/context``: the live breakdown as plain text, shared with ``heron sessions context``."""

from __future__ import annotations

import re
from pathlib import Path

from heron.cli.sessions_context import format_context_breakdown
from heron.cli.tui.context_view import LEDGER_SHOWN, context_file_lines, context_files_line, format_context
from heron.coding.context_files import load_context_files
from heron.coding.runtime import ContextBreakdown
from heron.context.records.ledger import LedgerRecord


def breakdown(**fields: object) -> ContextBreakdown:
    values: dict[str, object] = {
        "window": 128_000,
        "threshold": 111_616,
        "system_prompt": 2_000,
        "tools": 1_500,
        "context_files": 400,
        "summaries": 0,
        "messages": {"user": 300, "assistant": 1_200, "toolResult": 20_000},
        "total": 25_000,
    }
    values.update(fields)
    return ContextBreakdown(**values)  # type: ignore[arg-type]


def row(text: str, label: str) -> str:
    return next(line for line in text.splitlines() if line.strip().startswith(label))


def test_parts_total_window_and_threshold() -> None:
    text = format_context(breakdown())
    assert "128,000" in text and "111,616" in text and "19.5%" in text
    assert "2,000" in row(text, "system prompt") and "1,500" in row(text, "tools")
    assert "400" in row(text, "of which context files")
    roles = [line.split()[1] for line in text.splitlines() if line.strip().startswith("messages: ")]
    assert roles == ["toolResult", "assistant", "user"]  # largest first
    assert "25,000" in row(text, "total")
    assert re.search(r"ledger: empty", text, re.IGNORECASE)


def test_the_script_tool_is_listed_with_its_own_overhead() -> None:
    text = format_context(breakdown(program_tools={"script": 180}))
    assert "180" in row(text, "of which the script tool")
    assert "of which the script tool" not in format_context(breakdown())


def test_the_same_text_as_heron_sessions_context() -> None:
    b = breakdown()
    assert format_context(b) == "\n".join(format_context_breakdown(b, offline=False, ledger_limit=LEDGER_SHOWN))


def test_the_ledger_is_summarised_and_the_newest_records_listed() -> None:
    records = [
        LedgerRecord(
            kind="prune",
            ref=f"call_{i}",
            tool="read",
            chars_before=8_000,
            chars_after=80,
            recover="the session keeps it",
        )
        for i in range(20)
    ]
    records.append(
        LedgerRecord(
            kind="spill",
            ref="call_x",
            tool="bash",
            chars_before=400_000,
            chars_after=8_000,
            recover="read /tmp/spill.txt with offset/limit",
        )
    )
    text = format_context(breakdown(ledger=records, pruned_results=20))
    assert "21 record(s)" in text
    assert f"{21 - LEDGER_SHOWN} older record(s) not shown" in text
    spill = row(text, "spill")
    assert "call_x" in spill and "100,000 -> 2,000 tokens" in spill and "read /tmp/spill.txt" in spill
    assert "20 old tool result(s) pruned" in text


def test_context_files_have_their_own_section_and_the_start_names_them(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("Run the tests with make test.\n" * 20)
    files = load_context_files(tmp_path, home=tmp_path / "home")
    assert context_files_line(files, tmp_path) == "context files: AGENTS.md (~150 tokens in the system prompt)"
    lines = context_file_lines(files, tmp_path)
    assert lines[0] == "context files (in the system prompt):"
    assert lines[1].split() == ["AGENTS.md", "150", "(project)"]
    assert context_files_line([], tmp_path).startswith("context files: none")
    text = format_context(breakdown())
    names = [line.strip() for line in text.splitlines()]
    # under the system prompt they are part of, not under the tools
    assert (
        names.index(row(text, "of which context files").strip()) == names.index(row(text, "system prompt").strip()) + 1
    )
