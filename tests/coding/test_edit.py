# ruff: noqa: RUF001 - typographic quotes in strings are what these tests are about
"""edit: exact then loose matching, spans replaced in the original text only, endings and
BOM kept, atomic multi-edits, precise errors, stale-read refusal, diff and first line."""

from __future__ import annotations

import asyncio
import os
import stat
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.tools.edit import EditTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import EditParams, Replacement


@pytest.fixture
def env(tmp_path: Path) -> ToolEnv:
    work = tmp_path / "work"
    work.mkdir()
    return ToolEnv(cwd=work, home=tmp_path / "home")


@pytest.fixture
def tool(env: ToolEnv) -> EditTool:
    return EditTool(env)


def params(
    path: str = "a.txt", old: str | None = None, new: str | None = None, edits: list[tuple[str, str]] | None = None
) -> EditParams:
    return EditParams(
        path=path,
        old_text=old,
        new_text=new,
        edits=None if edits is None else [Replacement(old_text=o, new_text=n) for o, n in edits],
    )


async def run(tool: EditTool, p: EditParams, signal: AbortSignal | None = None) -> ToolResult:
    updates: list[ToolResult] = []
    result = await tool.execute("call-1", p, signal or AbortSignal(), updates.append)
    assert not result.is_error
    return result


async def fail(tool: EditTool, p: EditParams, signal: AbortSignal | None = None) -> str:
    with pytest.raises(ToolError) as info:
        await tool.execute("call-1", p, signal or AbortSignal(), lambda _u: None)
    return str(info.value)


def text_of(result: ToolResult) -> str:
    block = result.content[0]
    assert block.type == "text"
    return block.text


def put(env: ToolEnv, content: str | bytes, name: str = "a.txt") -> Path:
    path = env.cwd / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def mark_read(env: ToolEnv, path: Path) -> None:
    info = path.stat()
    env.reads.record(path, None, None, info.st_mtime_ns, info.st_size)


# --- success ------------------------------------------------------------------------


async def test_replaces_unique_text_and_reports_diff(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "one\ntwo\nthree\nfour\nfive\n")
    result = await run(tool, params(old="three", new="THREE"))
    assert text_of(result) == "Successfully replaced text in a.txt."
    assert path.read_text() == "one\ntwo\nTHREE\nfour\nfive\n"
    assert result.details == {
        "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1,5 +1,5 @@\n one\n two\n-three\n+THREE\n four\n five\n",
        "first_changed_line": 3,
        "edits": 1,
        "fuzzy_match": False,
    }


async def test_diff_has_three_lines_of_context_and_whole_file_line_numbers(env: ToolEnv, tool: EditTool) -> None:
    put(env, "".join(f"line {i}\n" for i in range(1, 101)))
    result = await run(tool, params(old="line 50\n", new="fifty\n"))
    assert result.details["diff"] == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -47,7 +47,7 @@\n"
        " line 47\n line 48\n line 49\n-line 50\n+fifty\n line 51\n line 52\n line 53\n"
    )
    assert result.details["first_changed_line"] == 50


async def test_diff_separate_hunks_keep_their_line_numbers(env: ToolEnv, tool: EditTool) -> None:
    put(env, "".join(f"line {i}\n" for i in range(1, 41)))
    result = await run(tool, params(edits=[("line 5\n", "five\n"), ("line 30\n", "thirty\n")]))
    diff = result.details["diff"]
    assert "@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+five\n" in diff
    assert "@@ -27,7 +27,7 @@\n line 27\n line 28\n line 29\n-line 30\n+thirty\n" in diff
    assert result.details["first_changed_line"] == 5


async def test_diff_line_numbers_ignore_form_feeds_and_line_separators(env: ToolEnv, tool: EditTool) -> None:
    put(env, "".join(f"l{i}\n" for i in range(1, 13)).replace("l7", "l7\x0cx\u2028y\x85z"))
    result = await run(tool, params(old="l9\n", new="nine\n"))
    assert result.details["diff"] == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -6,7 +6,7 @@\n l6\n l7\x0cx\u2028y\x85z\n l8\n-l9\n+nine\n l10\n l11\n l12\n"
    )
    assert result.details["first_changed_line"] == 9


async def test_diff_marks_missing_newline_at_end(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a\nb")
    result = await run(tool, params(old="b", new="c"))
    assert result.details["diff"] == (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n"
        "+c\n\\ No newline at end of file\n"
    )


async def test_first_changed_line_skips_unchanged_leading_lines_of_the_match(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a\nb\nc\nd\n")
    result = await run(tool, params(old="b\nc\n", new="b\nC\n"))
    assert result.details["first_changed_line"] == 3


async def test_first_changed_line_for_added_and_deleted_lines(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a\nb\nc\n")
    added = await run(tool, params(old="b\n", new="b\nnew\n"))
    assert path.read_text() == "a\nb\nnew\nc\n"
    assert added.details["first_changed_line"] == 3
    deleted = await run(tool, params(old="new\nc\n", new=""))
    assert path.read_text() == "a\nb\n"
    assert deleted.details["first_changed_line"] == 2  # clamped to the last line of the new file
    assert deleted.details["diff"] == "--- a/a.txt\n+++ b/a.txt\n@@ -1,4 +1,2 @@\n a\n b\n-new\n-c\n"


async def test_new_text_containing_old_text_is_replaced_once(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "call(foo)\n")
    await run(tool, params(old="foo", new="foo, foo"))
    assert path.read_text() == "call(foo, foo)\n"


async def test_non_ascii_content(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "名前 = 'ホロン'  # 🐦 鳥\nß = 'straße'\n")
    result = await run(tool, params(old="'ホロン'", new="'サギ 🦩'"))
    assert path.read_text() == "名前 = 'サギ 🦩'  # 🐦 鳥\nß = 'straße'\n"
    assert result.details["first_changed_line"] == 1
    await run(tool, params(old="straße", new="STRASSE"))
    assert path.read_text() == "名前 = 'サギ 🦩'  # 🐦 鳥\nß = 'STRASSE'\n"


async def test_path_forms_and_display_path(env: ToolEnv, tool: EditTool, tmp_path: Path) -> None:
    put(env, "x\n", "sub.txt")
    result = await run(tool, params(path="@sub.txt", old="x", new="y"))
    assert text_of(result) == "Successfully replaced text in sub.txt."
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    result = await run(tool, params(path=str(outside), old="x", new="y"))
    assert text_of(result) == f"Successfully replaced text in {outside}."
    assert result.details["diff"].startswith(f"--- a{outside}\n+++ b{outside}\n")


async def test_keeps_file_mode_and_leaves_no_temp_files(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "#!/bin/sh\necho hi\n", "run.sh")
    path.chmod(0o751)
    await run(tool, params(path="run.sh", old="hi", new="bye"))
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in env.cwd.iterdir()) == ["run.sh"]


async def test_edit_through_symlink_keeps_the_link(env: ToolEnv, tool: EditTool) -> None:
    target = put(env, "value = 1\n", "real.txt")
    link = env.cwd / "link.txt"
    link.symlink_to(target)
    await run(tool, params(path="link.txt", old="1", new="2"))
    assert link.is_symlink()
    assert target.read_text() == "value = 2\n"


async def test_notes_the_write_in_the_read_tracker(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a\n")
    mark_read(env, path)
    await run(tool, params(old="a", new="bb"))
    record = env.reads.last_read(path)
    assert record is not None
    info = path.stat()
    assert (record.mtime_ns, record.size) == (info.st_mtime_ns, info.st_size)
    # the model saw the result of its own edit: a second edit is not "stale"
    await run(tool, params(old="bb", new="c"))
    assert path.read_text() == "c\n"


def test_concurrency_key_is_the_resolved_path(env: ToolEnv, tool: EditTool) -> None:
    expected = str(env.cwd / "a.txt")
    for spelling in ("a.txt", "./a.txt", "@a.txt", "sub/../a.txt", expected):
        assert tool.concurrency_key(params(path=spelling, old="x", new="y")) == expected


async def test_two_concurrent_edits_of_one_file_both_land(env: ToolEnv, tool: EditTool) -> None:
    """The loop serialises calls with one key; run them that way and both edits survive."""
    path = put(env, "a = 1\nb = 2\n")
    lock = asyncio.Lock()

    async def edit(old: str, new: str) -> None:
        async with lock:
            await run(tool, params(old=old, new=new))

    await asyncio.gather(edit("a = 1", "a = 10"), edit("b = 2", "b = 20"))
    assert path.read_text() == "a = 10\nb = 20\n"


def test_schema_documents_every_argument(tool: EditTool) -> None:
    schema = tool.definition().parameters
    assert set(schema["properties"]) == {"path", "old_text", "new_text", "edits"}
    assert schema["required"] == ["path"]
    for name in ("path", "old_text", "new_text", "edits"):
        assert schema["properties"][name]["description"]
    assert tool.name == "edit"


def test_arguments_from_the_model_are_validated() -> None:
    parsed = EditParams.model_validate({"path": "a.txt", "edits": [{"old_text": "a", "new_text": "b"}]})
    assert parsed.edits == [Replacement(old_text="a", new_text="b")]
    with pytest.raises(ValidationError, match=r"edits\.0\.old_txt"):
        EditParams.model_validate({"path": "a.txt", "edits": [{"old_txt": "a", "new_text": "b"}]})
    with pytest.raises(ValidationError, match="oldText"):
        EditParams.model_validate({"path": "a.txt", "oldText": "a", "new_text": "b"})


# --- several edits ------------------------------------------------------------------


async def test_edits_are_matched_against_the_original(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "alpha\nbeta\ngamma\n")
    result = await run(tool, params(edits=[("alpha", "beta"), ("beta", "delta")]))
    assert text_of(result) == "Successfully applied 2 edits to a.txt."
    assert path.read_text() == "beta\ndelta\ngamma\n"
    assert result.details["edits"] == 2
    assert result.details["first_changed_line"] == 1


async def test_edits_in_any_order_and_adjacent(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "abcdef\n")
    await run(tool, params(edits=[("def", "DEF"), ("abc", "ABC")]))
    assert path.read_text() == "ABCDEF\n"


async def test_a_list_of_one_edit_reads_like_a_single_edit(env: ToolEnv, tool: EditTool) -> None:
    put(env, "x\n")
    result = await run(tool, params(edits=[("x", "y")]))
    assert text_of(result) == "Successfully replaced text in a.txt."


async def test_edits_are_all_or_nothing(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "one\ntwo\nthree\n")
    message = await fail(tool, params(edits=[("one", "1"), ("zzzz qqqq", "2"), ("three", "3")]))
    assert message == (
        "edits[1]: Could not find the text in a.txt. old_text must match the file exactly, including "
        "whitespace and indentation.\n\n"
        "No edits were applied; fix the failing edits and send them all again."
    )
    assert path.read_text() == "one\ntwo\nthree\n"


async def test_every_failing_edit_is_reported(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "x\nx\ny\n")
    message = await fail(tool, params(edits=[("x", "1"), ("y", "2"), ("nothing here at all", "3")]))
    assert message == (
        "edits[0]: Found 2 occurrences of the text in a.txt (lines 1, 2). The text must be unique; "
        "add more surrounding context.\n\n"
        "edits[2]: Could not find the text in a.txt. old_text must match the file exactly, including "
        "whitespace and indentation.\n\n"
        "No edits were applied; fix the failing edits and send them all again."
    )
    assert path.read_text() == "x\nx\ny\n"


async def test_overlapping_edits_are_rejected(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a\nb\nc\nd\n")
    message = await fail(tool, params(edits=[("c\nd", "C\nD"), ("b\nc", "B\nC")]))
    assert message == (
        "edits[0] (lines 3-4) and edits[1] (lines 2-3) overlap in a.txt. Each edit must change a separate "
        "part of the file; merge overlapping edits into one.\n\n"
        "No edits were applied; fix the failing edits and send them all again."
    )
    assert path.read_text() == "a\nb\nc\nd\n"


async def test_the_same_edit_twice_overlaps(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a\nb\n")
    message = await fail(tool, params(edits=[("b", "B"), ("a", "A"), ("b", "C")]))
    assert message.startswith("edits[0] (line 2) and edits[2] (line 2) overlap in a.txt.")


async def test_edit_inside_another_overlaps(env: ToolEnv, tool: EditTool) -> None:
    put(env, "hello world\n")
    message = await fail(tool, params(edits=[("hello world", "x"), ("lo wo", "y")]))
    assert message.startswith("edits[0] (line 1) and edits[1] (line 1) overlap in a.txt.")


# --- argument errors ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (params(old="a", new="b", edits=[("a", "b")]), "Give either old_text and new_text, or edits, not both."),
        (params(), "Give old_text and new_text (one replacement), or edits (a list of replacements)."),
        (params(old="a"), "new_text is missing: give the replacement together with old_text."),
        (params(new="a"), "old_text is missing: give the exact text to replace together with new_text."),
        (params(edits=[]), "edits is empty: give at least one {old_text, new_text} pair."),
        (
            params(old="", new="x"),
            "old_text is empty. Give the exact text to replace; use write to create or overwrite a whole file.",
        ),
        (params(old="same", new="same"), "old_text and new_text are identical, so the edit changes nothing."),
        (params(old="a\r\nb", new="a\nb"), "old_text and new_text are identical, so the edit changes nothing."),
        (
            params(edits=[("a", "b"), ("", "x"), ("c", "c")]),
            "edits[1]: old_text is empty. Give the exact text to replace; use write to create or overwrite a "
            "whole file.\n\n"
            "edits[2]: old_text and new_text are identical, so the edit changes nothing.\n\n"
            "No edits were applied; fix the failing edits and send them all again.",
        ),
    ],
)
async def test_argument_errors(env: ToolEnv, tool: EditTool, p: EditParams, message: str) -> None:
    path = put(env, "a\nc\nsame\n")
    assert await fail(tool, p) == message
    assert path.read_text() == "a\nc\nsame\n"


async def test_missing_file(tool: EditTool) -> None:
    assert await fail(tool, params(path="nope/missing.txt", old="a", new="b")) == "File not found: nope/missing.txt"


async def test_directory(env: ToolEnv, tool: EditTool) -> None:
    (env.cwd / "src").mkdir()
    assert await fail(tool, params(path="src", old="a", new="b")) == (
        "src is a directory, not a file. Give the path of one file to edit."
    )


async def test_fifo_is_refused(env: ToolEnv, tool: EditTool) -> None:
    os.mkfifo(env.cwd / "pipe")
    assert await fail(tool, params(path="pipe", old="a", new="b")) == (
        "pipe is not a regular file (a device, socket or pipe), so it was not edited."
    )


async def test_unreadable_file(env: ToolEnv, tool: EditTool, monkeypatch: pytest.MonkeyPatch) -> None:
    path = put(env, "a\n")

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # chmod 0 does not stop root, who runs CI
    assert await fail(tool, params(old="a", new="b")) == (
        "Permission denied: cannot read a.txt (its permissions do not allow it)."
    )
    monkeypatch.undo()
    assert path.read_text() == "a\n"


async def test_unwritable_directory(env: ToolEnv, tool: EditTool, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = env.cwd / "ro"
    sub.mkdir()
    (sub / "f.txt").write_text("a\n")

    real_open = os.open

    def denied(file: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(file).endswith(".tmp") and flags & os.O_CREAT:  # the temp file next to the target
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", denied)  # root may write anywhere: simulate a 0555 directory
    assert await fail(tool, params(path="ro/f.txt", old="a", new="b")) == (
        f"Permission denied: cannot write ro/f.txt, because its directory {sub} is not writable."
    )
    monkeypatch.undo()
    assert (sub / "f.txt").read_text() == "a\n"


async def test_aborted_before_start_changes_nothing(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a\n")
    signal = AbortSignal()
    signal.abort()
    assert await fail(tool, params(old="a", new="b"), signal) == "Edit aborted; a.txt was not changed."
    assert path.read_text() == "a\n"


# --- not found / ambiguous ----------------------------------------------------------

NOT_FOUND = (
    "Could not find the text in a.txt. old_text must match the file exactly, including whitespace and indentation."
)


async def test_not_found_without_a_similar_line(env: ToolEnv, tool: EditTool) -> None:
    put(env, "hello\n")
    assert await fail(tool, params(old="zzzz qqqq", new="x")) == NOT_FOUND


async def test_not_found_quotes_the_most_similar_line(env: ToolEnv, tool: EditTool) -> None:
    put(env, "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n")
    message = await fail(tool, params(old="    return a * b", new="x"))
    assert message == NOT_FOUND + "\nThe most similar line is line 2:\n    return a + b"


async def test_not_found_points_at_the_first_line_the_file_lacks(env: ToolEnv, tool: EditTool) -> None:
    put(env, "def add(a, b):\n    total = a + b\n    return total\n")
    message = await fail(tool, params(old="def add(a, b):\n    totl = a + b\n    return total\n", new="x"))
    assert message == NOT_FOUND + "\nThe most similar line is line 2:\n    total = a + b"


async def test_not_found_when_lines_exist_but_not_together(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a = 1\nb = 2\nc = 3\n")
    message = await fail(tool, params(old="a = 1\nc = 3", new="x"))
    assert message == NOT_FOUND + "\nEvery line of old_text occurs in a.txt, but not as one consecutive block."


async def test_not_found_hint_cuts_long_lines(env: ToolEnv, tool: EditTool) -> None:
    long_line = "value = [" + ", ".join(str(i) for i in range(100)) + "]"
    put(env, long_line + "\n")
    message = await fail(tool, params(old=long_line.replace("50", "5O"), new="x"))
    assert message == NOT_FOUND + "\nThe most similar line is line 1:\n" + long_line[:200] + "…"


async def test_not_found_hint_in_a_long_file(env: ToolEnv, tool: EditTool) -> None:
    """Past 20,000 lines only lines sharing a word with old_text are compared (speed)."""
    put(env, "".join(f"    item_{i} = {i * 3}\n" for i in range(25_000)))
    message = await fail(tool, params(old="    item_24000 = 72OOO", new="x"))
    assert message == NOT_FOUND + "\nThe most similar line is line 24001:\n    item_24000 = 72000"


async def test_zero_byte_file(env: ToolEnv, tool: EditTool) -> None:
    put(env, b"")
    assert await fail(tool, params(old="anything", new="x")) == NOT_FOUND


async def test_several_occurrences_with_their_lines(env: ToolEnv, tool: EditTool) -> None:
    put(env, "x = 1\ny = 2\nx = 1\nz\nx = 1\n")
    assert await fail(tool, params(old="x = 1", new="x = 2")) == (
        "Found 3 occurrences of the text in a.txt (lines 1, 3, 5). The text must be unique; "
        "add more surrounding context."
    )


async def test_several_occurrences_on_one_line(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a\nfoo(x) + foo(y)\n")
    assert await fail(tool, params(old="foo", new="bar")) == (
        "Found 2 occurrences of the text in a.txt (line 2). The text must be unique; add more surrounding context."
    )


async def test_overlapping_occurrences_are_ambiguous(env: ToolEnv, tool: EditTool) -> None:
    put(env, "aaa\n")
    assert await fail(tool, params(old="aa", new="b")) == (
        "Found 2 occurrences of the text in a.txt (line 1). The text must be unique; add more surrounding context."
    )


async def test_many_occurrences_list_ten_lines(env: ToolEnv, tool: EditTool) -> None:
    put(env, "x\n" * 20)
    assert await fail(tool, params(old="x", new="y")) == (
        "Found 20 occurrences of the text in a.txt (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …). "
        "The text must be unique; add more surrounding context."
    )


async def test_counting_stops_after_a_thousand(env: ToolEnv, tool: EditTool) -> None:
    put(env, "x\n" * 1500)
    assert await fail(tool, params(old="x", new="y")) == (
        "Found more than 1000 occurrences of the text in a.txt (lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …). "
        "The text must be unique; add more surrounding context."
    )


# --- loose matching -----------------------------------------------------------------


async def test_loose_match_on_trailing_whitespace(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "keep  \nif x:   \n    go()\t\nkeep2 \n")
    result = await run(tool, params(old="if x:\n    go()\n", new="if y:\n    stop()\n"))
    assert path.read_text() == "keep  \nif y:\n    stop()\nkeep2 \n"
    assert result.details["fuzzy_match"] is True
    assert text_of(result) == "Successfully replaced text in a.txt."


async def test_loose_match_leaves_blanks_after_the_span(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "x = ‘a’   \ny\n")
    await run(tool, params(old="x = 'a'", new="x = 'b'"))
    assert path.read_bytes().decode() == "x = 'b'   \ny\n"


async def test_loose_match_on_smart_quotes_keeps_other_smart_quotes(env: ToolEnv, tool: EditTool) -> None:
    original = "title = “Heron’s guide”\nmsg = ‘hello’\nquote = “keep me”\n"
    path = put(env, original)
    await run(tool, params(old="msg = 'hello'", new="msg = 'bye'"))
    assert path.read_text() == "title = “Heron’s guide”\nmsg = 'bye'\nquote = “keep me”\n"


async def test_loose_match_model_sent_smart_quotes_file_has_straight(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, 'say("hi")\nsay("yo")\n')
    await run(tool, params(old="say(“hi”)", new='say("hello")'))
    assert path.read_text() == 'say("hello")\nsay("yo")\n'


@pytest.mark.parametrize("dash", list("\u2010\u2011\u2012\u2013\u2014\u2015\u2212"))
async def test_loose_match_on_unicode_dashes(env: ToolEnv, tool: EditTool, dash: str) -> None:
    path = put(env, f"range 1{dash}5\nnote {dash} kept\n")
    await run(tool, params(old="range 1-5", new="range 1-9"))
    assert path.read_text() == f"range 1-9\nnote {dash} kept\n"


@pytest.mark.parametrize("space", list("\u00a0\u2002\u2003\u2009\u202f\u3000"))
async def test_loose_match_on_unicode_spaces(env: ToolEnv, tool: EditTool, space: str) -> None:
    path = put(env, f"price:{space}10\nother:{space}20\n")
    await run(tool, params(old="price: 10", new="price: 12"))
    assert path.read_text() == f"price: 12\nother:{space}20\n"


async def test_loose_match_that_is_ambiguous(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "s = ‘x’\nt = 1\ns = ’x’\n")
    assert await fail(tool, params(old="s = 'x'", new="s = 'y'")) == (
        "No exact match for the text in a.txt, and 2 near matches (lines 1, 3) that differ only in trailing "
        "whitespace, quotes, dashes or spaces. The text must be unique; add more surrounding context."
    )
    assert path.read_text() == "s = ‘x’\nt = 1\ns = ’x’\n"


async def test_exact_match_wins_over_loose_matches(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, 's = “x”\ns = "x"\n')
    result = await run(tool, params(old='s = "x"', new="s = 1"))
    assert path.read_text() == "s = “x”\ns = 1\n"
    assert result.details["fuzzy_match"] is False


async def test_loose_match_that_changes_nothing(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, 'x = "a"\n')
    assert await fail(tool, params(old="x = “a”", new='x = "a"')) == (
        "The edit leaves a.txt unchanged: the text it matched already reads as new_text."
    )
    assert path.read_text() == 'x = "a"\n'


async def test_blank_old_text_does_not_loosely_match_everything(env: ToolEnv, tool: EditTool) -> None:
    put(env, "a\nb\n")
    assert await fail(tool, params(old="   ", new="x")) == NOT_FOUND


# --- line endings, BOM, encodings ---------------------------------------------------


async def test_crlf_file_keeps_crlf(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"one\r\ntwo\r\nthree\r\n")
    result = await run(tool, params(old="one\ntwo\n", new="1\n2\n2.5\n"))
    assert path.read_bytes() == b"1\r\n2\r\n2.5\r\nthree\r\n"
    assert result.details["diff"] == ("--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,4 @@\n-one\n-two\n+1\n+2\n+2.5\n three\n")


async def test_crlf_file_edit_within_a_line(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"a = 1\r\nb = 2\r\n")
    await run(tool, params(old="b = 2", new="b = 3\nc = 4"))
    assert path.read_bytes() == b"a = 1\r\nb = 3\r\nc = 4\r\n"


async def test_crlf_old_text_written_with_crlf_still_matches(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"a\r\nb\r\n")
    await run(tool, params(old="a\r\nb", new="x\r\ny"))
    assert path.read_bytes() == b"x\r\ny\r\n"


async def test_bom_is_kept(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "\ufefffirst\nsecond\n")
    result = await run(tool, params(old="first", new="1st"))
    assert path.read_bytes() == b"\xef\xbb\xbf1st\nsecond\n"
    assert result.details["diff"] == "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n-first\n+1st\n second\n"


async def test_crlf_and_bom(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"\xef\xbb\xbfa\r\n\xe2\x80\x9cq\xe2\x80\x9d  \r\nb\r\n")
    result = await run(tool, params(old='a\n"q"\nb', new="a\nQ\nb"))
    assert path.read_bytes() == b"\xef\xbb\xbfa\r\nQ\r\nb\r\n"
    assert result.details["fuzzy_match"] is True
    assert result.details["first_changed_line"] == 2


async def test_mixed_line_endings_keep_each_region(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"a\r\nb\r\nc\nd\ne\r\n")
    await run(tool, params(edits=[("a\nb", "A\nB\nB2"), ("c\nd", "C\nD\nD2")]))
    assert path.read_bytes() == b"A\r\nB\r\nB2\r\nC\nD\nD2\ne\r\n"


async def test_mixed_line_endings_span_without_newline_uses_the_common_ending(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"a\r\nb\r\nc\n")
    await run(tool, params(old="c", new="c\nd"))
    assert path.read_bytes() == b"a\r\nb\r\nc\r\nd\n"


async def test_lone_carriage_returns_are_left_alone(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, b"progress\r50%\nend\n")
    await run(tool, params(old="end", new="END"))
    assert path.read_bytes() == b"progress\r50%\nEND\n"


async def test_invalid_utf8_is_refused_and_left_intact(env: ToolEnv, tool: EditTool) -> None:
    data = b"caf\xe9 = 1\nother = 2\n"
    path = put(env, data)
    assert await fail(tool, params(old="other = 2", new="other = 3")) == (
        "a.txt is not valid UTF-8 (byte 0xe9 at offset 3), so edit will not change it: rewriting it as text "
        "would corrupt it. Use bash to change it with a tool that keeps its encoding."
    )
    assert path.read_bytes() == data


# --- changed on disk since read -----------------------------------------------------

STALE = (
    "a.txt has changed on disk since you last read it. Read it again, then redo the edit against its current content."
)


async def test_file_changed_since_read_is_refused(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a = 1\n")
    mark_read(env, path)
    path.write_text("a = 1\nb = 2\n")
    assert await fail(tool, params(old="a = 1", new="a = 2")) == STALE
    assert path.read_text() == "a = 1\nb = 2\n"


async def test_file_touched_with_same_size_is_refused(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a = 1\n")
    mark_read(env, path)
    info = path.stat()
    path.write_text("a = 9\n")
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 1_000_000))
    assert await fail(tool, params(old="a = 9", new="a = 2")) == STALE


async def test_file_read_again_after_change_can_be_edited(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a = 1\n")
    mark_read(env, path)
    path.write_text("a = 1\nb = 2\n")
    mark_read(env, path)
    await run(tool, params(old="b = 2", new="b = 3"))
    assert path.read_text() == "a = 1\nb = 3\n"


async def test_file_never_read_can_be_edited(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a = 1\n")
    await run(tool, params(old="a = 1", new="a = 2"))
    assert path.read_text() == "a = 2\n"


# --- properties ---------------------------------------------------------------------

ALPHABET = st.sampled_from([*string.ascii_letters[:6], *" \t\n-'\"", "“", "’", "—", "\u00a0", "é", "🐦"])
# Loose matching needs typographic characters and trailing blanks in the span: make them common.
LOOSE_ALPHABET = st.sampled_from([*"ab \t\n-'\"", "“", "”", "’", "—", "\u2212", "\u00a0", "\u3000", "é"])


def _apply(cwd: Path, content: str, p: EditParams) -> tuple[ToolResult | None, str, bytes]:
    env = ToolEnv(cwd=cwd, home=cwd / "home")
    path = cwd / "a.txt"
    path.write_bytes(content.encode("utf-8"))
    tool = EditTool(env)
    try:
        result: ToolResult | None = asyncio.run(tool.execute("call-1", p, AbortSignal(), lambda _u: None))
        message = ""
    except ToolError as exc:
        result, message = None, str(exc)
    return result, message, path.read_bytes()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(ALPHABET, min_size=1, max_size=200), data=st.data())
def test_exact_edit_replaces_exactly_that_span(tmp_path: Path, content: str, data: Any) -> None:
    start = data.draw(st.integers(0, len(content) - 1))
    end = data.draw(st.integers(start + 1, len(content)))
    old = content[start:end]
    assume(content.find(old) == content.rfind(old))
    new = data.draw(st.text(ALPHABET, max_size=30))
    assume(new != old)
    result, message, written = _apply(tmp_path, content, params(old=old, new=new))
    assert result is not None, message
    assert written == (content[:start] + new + content[end:]).encode("utf-8")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=st.text(LOOSE_ALPHABET, min_size=1, max_size=120), data=st.data())
def test_loose_edit_touches_nothing_outside_the_span(tmp_path: Path, content: str, data: Any) -> None:
    start = data.draw(st.integers(0, len(content) - 1))
    end = data.draw(st.integers(start + 1, len(content)))
    region = content[start:end]
    # what a model would send: typographic characters flattened, trailing blanks dropped
    old = region.translate(
        str.maketrans({"“": '"', "”": '"', "’": "'", "—": "-", "\u2212": "-", "\u00a0": " ", "\u3000": " "})
    )
    old = "\n".join(line.rstrip(" \t") for line in old.split("\n"))
    assume(old.strip() and old not in content)
    new = "<NEW>"
    result, message, written = _apply(tmp_path, content, params(old=old, new=new))
    if result is None:
        assume(not message.startswith("No exact match"))  # ambiguous near matches: a correct refusal
        assume(not message.startswith("The edit leaves"))
        raise AssertionError(message)
    text = written.decode("utf-8")
    assert text.startswith(content[:start])
    assert text.endswith(content[end:])
    assert new in text


# --- read-only files and hard links ------------------------------------------------------


async def test_a_read_only_file_is_refused(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "a\n")
    path.chmod(0o444)
    assert await fail(tool, params(old="a", new="b")) == (
        "a.txt is read-only (mode 0444), so it was not changed. "
        "If it should change, make it writable first (e.g. chmod u+w with bash)."
    )
    assert path.read_text() == "a\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


async def test_a_hard_linked_file_is_edited_in_place(env: ToolEnv, tool: EditTool) -> None:
    path = put(env, "one\ntwo\n")
    other = env.cwd / "twin.txt"
    os.link(path, other)
    result = await run(tool, params(old="two", new="2"))
    assert text_of(result) == (
        "Successfully replaced text in a.txt. (Written in place: the file has other hard links, which see the "
        "change too.)"
    )
    assert result.details["hard_link"] is True
    assert other.read_text() == "one\n2\n"
    assert path.stat().st_nlink == 2
    assert sorted(p.name for p in env.cwd.iterdir()) == ["a.txt", "twin.txt"]
