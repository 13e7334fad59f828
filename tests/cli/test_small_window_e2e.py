"""Small windows never dead-end (docs/context.md, "Small windows").

The real ``heron`` command, one process per turn, against a scripted llama.cpp server
with a 4,096-token window that rejects a prompt that does not fit with llama.cpp's own
error body. Nothing is configured but ``--base-url`` and ``--model``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.local_run import Place
from tests.support.llama_server import LlamaBehaviour, LlamaServer

TURNS = 12


def prompt_of(turn: int, tokens: int = 1_000) -> str:
    """About ``tokens`` tokens of text (4 characters a token), different every turn."""
    words = " ".join(f"w{turn:02d}x{i:03d}" for i in range(tokens * 4 // 9))
    return f"Turn {turn}: remember these words. {words}"


def compactions(home: Path) -> int:
    (session,) = (home / "sessions").rglob("*.jsonl")
    return sum(1 for line in session.read_text().splitlines() if json.loads(line).get("type") == "compaction")


@pytest.mark.parametrize("props", [True, False], ids=["window-from-props", "window-learned"])
def test_twelve_turns_of_1000_token_prompts_in_a_4096_window(tmp_path: Path, props: bool) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, props=props))
    place = Place.make(tmp_path)
    try:
        for turn in range(TURNS):
            flags = ["--base-url", server.base_url, "--model", "gemma"] if turn == 0 else ["--continue"]
            done = place.run(*flags, "-p", prompt_of(turn), timeout=180)
            assert done.returncode == 0, f"turn {turn}: {done.stderr[-3000:]}"
        rejected = [i for i, s in enumerate(server.served) if s.rejected]
        # none when the server said its window; else the one that taught it, and no other
        assert len(rejected) == (0 if props else 1), rejected
        assert compactions(place.home) >= 1
        known = rejected[0] + 1 if rejected else 0  # from here on heron plans for the server's window
        for served in server.served[known:]:
            assert served.prompt_tokens + served.max_tokens <= 4_096, served
    finally:
        server.close()


def test_a_38_kb_prompt_completes_with_its_head_and_the_file(tmp_path: Path) -> None:
    server = LlamaServer(LlamaBehaviour(n_ctx=4_096, props=False))
    place = Place.make(tmp_path)
    try:
        big = prompt_of(0, 9_800)
        assert len(big) >= 38_000
        done = place.run("--base-url", server.base_url, "--model", "gemma", "-p", big, timeout=180)
        assert done.returncode == 0, done.stderr[-3000:]
        last = server.served[-1]
        assert not last.rejected
        text = json.dumps(last.body["messages"][-1])
        assert "too large for the context window" in text and "prompt-" in text
    finally:
        server.close()
