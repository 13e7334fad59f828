"""The local-server scenarios against a real ``llama-server`` (marker ``real_server``).

Skipped unless ``HERON_LLAMA_SERVER_URL`` names a running server (its ``/v1`` base URL,
started with ``-c 4096``; ``HERON_LLAMA_SERVER_MODEL`` is the model name sent, default
``local``). They assert on behaviour only - exit codes, what the session file records,
no request rejected once the window is known - never on the model's words. Generation
is capped by the output limit heron computes (a quarter of the window).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.cli.local_run import Place
from tests.cli.test_small_window_e2e import prompt_of

URL = os.environ.get("HERON_LLAMA_SERVER_URL", "")
MODEL = os.environ.get("HERON_LLAMA_SERVER_MODEL", "local")

pytestmark = [
    pytest.mark.real_server,
    pytest.mark.skipif(not URL, reason="HERON_LLAMA_SERVER_URL is not set (no llama.cpp server to run against)"),
]


def entries(home: Path) -> list[dict[str, Any]]:
    (session,) = (home / "sessions").rglob("*.jsonl")
    return [json.loads(line) for line in session.read_text().splitlines()]


def overflows(home: Path) -> int:
    return sum(
        1
        for e in entries(home)
        if e.get("type") == "message"
        and e["message"].get("role") == "assistant"
        and e["message"].get("errorKind") == "overflow"
    )


def test_one_word_prompt_within_a_minute(tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    done = place.run("--base-url", URL, "--model", MODEL, "-p", "Hello", timeout=60)
    assert done.returncode == 0, done.stderr
    assert overflows(place.home) == 0
    assert any(e.get("customType") == "heron.server" for e in entries(place.home))


def test_twelve_turns_compact_and_resume_without_flags(tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    for turn in range(12):
        flags = ["--base-url", URL, "--model", MODEL] if turn == 0 else ["--continue"]
        done = place.run(*flags, "-p", prompt_of(turn), timeout=300)
        assert done.returncode == 0, f"turn {turn}: {done.stderr[-2000:]}"
    assert overflows(place.home) == 0  # /props said the window: nothing was rejected
    assert any(e.get("type") == "compaction" for e in entries(place.home))
    calibrated = [e for e in entries(place.home) if (e.get("data") or {}).get("op") == "calibration"]
    assert calibrated  # the server's counts calibrated heron's


def test_a_38_kb_prompt_is_sent_as_its_head_and_a_file(tmp_path: Path) -> None:
    place = Place.make(tmp_path)
    done = place.run("--base-url", URL, "--model", MODEL, "-p", prompt_of(0, 9_800), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    users = [e["message"] for e in entries(place.home) if e.get("type") == "message" and e["message"]["role"] == "user"]
    assert "too large for the context window" in json.dumps(users[-1])
