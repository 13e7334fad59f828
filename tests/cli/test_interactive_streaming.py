"""The answer streams in place: under tmux (a real terminal emulator, so ``capture-pane``
is what the user sees) at 200 and at 80 columns, words of a slowly streamed markdown
answer show above the input line while the request is still streaming, no screen line is
wider than the terminal, and when the answer ends its text is in the transcript. Each
run keeps a text screenshot of the streaming transcript in its temp dir."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli.test_interactive import _chunk, _usage
from tests.cli.test_interactive_esc import start_tmux, stop_tmux
from tests.support.http_server import LocalServer, Reply

WORDS = 120


def slow_markdown(delay: float) -> Reply:
    """A paragraph with **bold**, then a list, one word per SSE event, ``delay`` s apart."""
    words = [f"w{n}" for n in range(WORDS)]
    words[3] = "**bold**"
    text = " ".join(words[:80]) + "\n\n" + "\n".join(f"- item {w}" for w in words[80:])
    pieces = [text[i : i + 6] for i in range(0, len(text), 6)]
    lines = [f"data: {json.dumps(_chunk({'role': 'assistant', 'content': ''}))}"]
    lines += [f"data: {json.dumps(_chunk({'content': p}))}" for p in pieces]
    lines += [f"data: {json.dumps(_chunk(finish='stop'))}", f"data: {json.dumps(_usage(1_500, 300))}", "data: [DONE]"]
    width = max(len(line) for line in lines)
    body = "".join(line.ljust(width) + "\n\n" for line in lines)
    return Reply(body=body, chunk_size=width + 2, chunk_delay=delay)


@pytest.mark.parametrize("columns", [200, 80])
def test_the_answer_streams_in_place_within_the_width(columns: int, local_server: LocalServer, tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    project.mkdir()
    local_server.queue(slow_markdown(0.04))
    tmux = start_tmux(local_server, home, project, f"{tmp_path.name}-{columns}", size=(columns, 40))
    try:
        tmux.wait("(Shift+Tab)")
        tmux("send-keys", "-t", "heron", "write it", "Enter")
        screen = tmux.wait("w12 ")  # early: the paragraph is far from done
        assert "w70" not in screen
        (tmp_path / f"screen-streaming-{columns}.txt").write_text(screen)
        seen = []
        deadline = time.monotonic() + 60
        while "─ test-model" not in (screen := tmux.screen()):
            seen.append(screen)
            assert time.monotonic() < deadline, screen
            time.sleep(0.1)
        for shot in [*seen, screen]:
            assert all(len(line) <= columns for line in shot.splitlines())
        everything = tmux("capture-pane", "-p", "-S", "-", "-t", "heron")  # with the scrollback
        (tmp_path / f"transcript-{columns}.txt").write_text(everything)
        words = " ".join(everything.split("› write it", 1)[1].split())  # noqa: RUF001
        assert words.startswith("w0 w1 w2 bold w4 w5") and "**" not in words  # markdown, rendered
        assert " ".join(f"w{n}" for n in range(4, 80)) in words  # the paragraph whole, in order
        assert " ".join(f"• item w{n}" for n in range(80, WORDS)) in words
    finally:
        stop_tmux(tmux)
