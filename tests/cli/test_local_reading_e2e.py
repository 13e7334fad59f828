"""A CPU model reading a long prompt, through the real ``heron`` command (issue 37).

The server (:class:`tests.support.reading_server.ReadingServer`) reads every prompt at a
fixed speed and sends nothing before it is done. ``timeouts.firstByteMs`` and ``idleMs``
are lowered to 1 s, and the speed heron assumes for a server it never measured is set so
high that it explains no wait: what makes heron wait is the speed the first answer
measured (its ``timings``), kept in ``$HERON_HOME/cache/reading-speeds.json`` for the next
``heron -p --continue`` process, or the progress llama.cpp streams. Each turn reaches the
server exactly once.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.local_run import Place
from tests.support.reading_server import ReadingServer

SETTINGS = {
    "timeouts": {"firstByteMs": 1_000, "idleMs": 1_000, "readingTokensPerSecond": 1_000_000},
    "retry": {"maxRetries": 2, "baseDelayMs": 10},
}
LONG = "a line of a long log that a CPU model reads slowly\n" * 4_000  # ~200k chars: ~50k tokens


@pytest.fixture
def made() -> Iterator[list[ReadingServer]]:
    servers: list[ReadingServer] = []
    yield servers
    for server in servers:
        server.close()


def place(tmp_path: Path, name: str, server: ReadingServer) -> tuple[Place, list[str]]:
    (tmp_path / name).mkdir()
    spot = Place.make(tmp_path / name)
    (spot.home / "settings.json").write_text(json.dumps(SETTINGS))
    return spot, ["--base-url", server.base_url, "--model", "cpu-model"]


def test_the_speed_one_process_measured_lets_the_next_wait_for_a_long_prompt(
    tmp_path: Path, made: list[ReadingServer]
) -> None:
    server = ReadingServer(tokens_per_second=20_000)  # heron's first request: well under 1 s
    made.append(server)
    spot, args = place(tmp_path, "measured", server)
    first = spot.run(*args, "-p", "hello")
    assert first.returncode == 0, first.stderr[-2000:]
    cache = spot.home / "cache" / "reading-speeds.json"
    assert cache.exists(), "the first answer's timing was kept"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600
    second = spot.run(*args, "-p", "--continue", "-", stdin=LONG)
    assert second.returncode == 0, second.stderr[-2000:]
    assert second.stdout.strip() == "read it all"
    assert server.reading_seconds(server.bodies[-1]) > 1.5  # past the 1 s bounds
    assert len(server.bodies) == 2  # one request per turn: nothing sent twice
    assert "retrying" not in second.stderr


def test_without_a_measurement_the_long_prompt_is_given_up_once_not_sent_again(
    tmp_path: Path, made: list[ReadingServer]
) -> None:
    server = ReadingServer(tokens_per_second=20_000)
    made.append(server)
    spot, args = place(tmp_path, "fresh", server)
    done = spot.run(*args, "-p", "-", stdin=LONG)
    assert done.returncode == 1
    assert "heron does not send it again" in done.stderr, done.stderr[-2000:]
    assert "timeouts.firstByteMs" in done.stderr and "retrying" not in done.stderr
    assert len(server.bodies) == 1


def test_llama_progress_keeps_heron_waiting(tmp_path: Path, made: list[ReadingServer]) -> None:
    server = ReadingServer(tokens_per_second=20_000, progress=True, batch=4_000)  # a chunk every 0.2 s
    made.append(server)
    spot, args = place(tmp_path, "progress", server)
    done = spot.run(*args, "-p", "-", stdin=LONG)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "read it all"
    assert len(server.bodies) == 1 and server.bodies[0]["return_progress"] is True
