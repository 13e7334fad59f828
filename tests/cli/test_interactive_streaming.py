"""The answer streams in place: the real program under tmux (a real terminal emulator, so
``capture-pane`` is what the user sees), at 200 and at 80 columns at once (two windows,
one server), streaming a 2,000-word markdown answer (headings, lists, code, a table, wide
CJK and combining characters, :mod:`tests.support.long_answer`).

While it streams, the newest words are on the screen, in order, with the words before
them (in the transcript or the live block above the input line); no line is wider than
the terminal (``-J`` joins what tmux wrapped, so an overrun shows as a longer line); and
when it ends, the transcript equals the one the same answer leaves when the server sends
it in one piece. Then, in the same heron, an edit call being written shows its old and
new lines, and Esc stops it. Each run keeps text screenshots in its temp dir.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

from rich.cells import cell_len

from tests.cli.test_interactive import _chunk, _usage, answer
from tests.cli.test_interactive_esc import Tmux, slow_tool_call, start_tmux, stop_tmux
from tests.support.http_server import LocalServer, Reply
from tests.support.long_answer import long_answer

PIECE = 12  # characters per SSE event
DELAY = 0.008  # seconds between events: the answer streams for ~8 s
WORD = re.compile(r"(?<![0-9A-Za-z])w(\d+)(?!\d)")
FOOTER = "─ test-model"
SIZES = (200, 80)


def slow(text: str) -> Reply:
    pieces = [text[i : i + PIECE] for i in range(0, len(text), PIECE)]
    lines = [f"data: {json.dumps(_chunk({'role': 'assistant', 'content': ''}))}"]
    lines += [f"data: {json.dumps(_chunk({'content': p}))}" for p in pieces]  # ASCII: \u escapes
    lines += [f"data: {json.dumps(_chunk(finish='stop'))}", f"data: {json.dumps(_usage(1_500, 3_000))}", "data: [DONE]"]
    width = max(len(line) for line in lines)
    body = "".join(line.ljust(width) + "\n\n" for line in lines)  # one event per write
    return Reply(body=body, chunk_size=width + 2, chunk_delay=DELAY)


def joined(tmux: Tmux, history: bool = False) -> list[str]:
    """The screen (with the scrollback), lines tmux wrapped joined back."""
    scroll = ["-S", "-"] if history else []
    return [line.rstrip() for line in tmux("capture-pane", "-p", "-J", *scroll, "-t", "heron").splitlines()]


def after_banner(lines: list[str]) -> list[str]:
    """The lines after the start-up banner, whose long lines (the session path) the terminal
    wraps on purpose: printed unwrapped, so they are copied whole."""
    starts = [n for n, line in enumerate(lines) if line.startswith("Enter sends · ")]
    return lines[starts[-1] + 1 :] if starts else lines


def answer_lines(lines: list[str], prompt: str) -> list[str]:
    """The transcript between the prompt's line and the footer after it."""
    start = next(n for n, line in enumerate(lines) if line.endswith(prompt))
    end = next(n for n in range(start, len(lines)) if lines[n].startswith(FOOTER))
    return lines[start + 1 : end]


def test_a_long_markdown_answer_streams_in_place_and_ends_as_if_sent_whole(
    local_server: LocalServer, tmp_path: Path
) -> None:
    text = long_answer(2_000)
    last = max(int(n) for n in WORD.findall(text))
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    local_server.queue(slow(text), slow(text), answer(text), answer(text))
    started = [start_tmux(local_server, home, project, f"{tmp_path.name}-{c}", size=(c, 40)) for c in SIZES]
    try:
        for tmux in started:
            tmux.wait("(Shift+Tab)")
        for tmux in started:
            tmux("send-keys", "-t", "heron", "stream it", "Enter")
        begun = time.monotonic()
        middle: dict[int, list[str]] = {}
        deadline = time.monotonic() + 120
        while len(middle) < len(started) or any(FOOTER not in s for s in map(Tmux.screen, started)):
            for columns, tmux in zip(SIZES, started, strict=True):
                lines = after_banner(joined(tmux))
                assert all(cell_len(line) <= columns for line in lines), "\n".join(lines)
                shown = {int(n) for line in lines for n in WORD.findall(line)}
                newest = max(shown, default=0)
                if columns not in middle and 400 <= newest < last - 400 and FOOTER not in "\n".join(lines):
                    middle[columns] = lines
                    # the newest words arrive on the screen with those before them
                    missing = set(range(newest - 20, newest + 1)) - shown
                    assert not missing, f"{sorted(missing)} not shown:\n" + "\n".join(lines)
                    (tmp_path / f"screen-streaming-{columns}.txt").write_text("\n".join(lines) + "\n")
            assert time.monotonic() < deadline, "the answer did not finish"
            time.sleep(0.1)
        print(f"streamed in {time.monotonic() - begun:.1f} s")
        assert set(middle) == set(SIZES), "no screen was captured mid-stream"
        for tmux in started:
            tmux("send-keys", "-t", "heron", "all at once", "Enter")
        for columns, tmux in zip(SIZES, started, strict=True):
            deadline = time.monotonic() + 60
            while "\n".join(lines := joined(tmux, history=True)).count(FOOTER) < 2:
                assert time.monotonic() < deadline, "the second answer did not finish"
                time.sleep(0.1)
            (tmp_path / f"transcript-{columns}.txt").write_text("\n".join(lines) + "\n")
            lines = after_banner(lines)
            assert all(cell_len(line) <= columns for line in lines)
            streamed, whole = answer_lines(lines, "› stream it"), answer_lines(lines, "› all at once")  # noqa: RUF001
            assert streamed == whole
            words = [int(n) for line in streamed for n in WORD.findall(line)]
            assert words == list(range(last + 1))  # every word once, in order
            assert "漢字かな交じり文w90" in "".join(streamed) and "cafe\u0301w" in "".join(streamed)
            assert not any("**" in line or line.startswith("#") for line in streamed)  # rendered
        edit_being_written(started[1], local_server, project, tmp_path)
    finally:
        for tmux in started:
            stop_tmux(tmux)


def test_the_long_answer_holds_what_the_streaming_test_is_about() -> None:
    doc = long_answer(2_000)
    assert 2_000 <= len(doc.split()) < 2_200
    for part in ("# Report", "## Section", "- item", "10. step", "```python", "| word |", "漢字", "\u0301"):
        assert part in doc, part


def edit_being_written(tmux: Tmux, server: LocalServer, project: Path, shots: Path) -> None:
    """An edit call whose arguments stream for ~2.4 s: its old and new lines show as they
    arrive, and Esc stops it before it runs (the heron of the long answer, reused)."""
    (project / "app.py").write_text("def total(xs):\n    return sum(xs[:-1])\n")
    args = {
        "path": "app.py",
        "old_text": "def total(xs):\n    return sum(xs[:-1])",
        "new_text": "def total(xs):\n    # every item counts\n    return sum(xs)",
    }
    server.queue(slow_tool_call("", "call_e", tool="edit", args=args, delay=0.15))
    tmux("send-keys", "-t", "heron", "fix the total", "Enter")
    screen = tmux.wait("│ + def total(xs):")  # the new text is arriving
    assert "● edit app.py …" in screen and "│ -     return sum(xs[:-1])" in screen
    assert "return sum(xs)" not in screen.replace("sum(xs[:-1])", "")  # not complete yet
    (shots / "screen-edit-streaming.txt").write_text(screen)
    tmux("send-keys", "-t", "heron", "Escape")
    tmux.wait("aborted · not run: edit app.py")
    time.sleep(0.5)  # a call let through would run at once: its arguments were complete
    assert (project / "app.py").read_text() == "def total(xs):\n    return sum(xs[:-1])\n"
