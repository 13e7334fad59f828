"""The recall index given text SQLite cannot store: a lone surrogate escaped in a session
line (``"\\ud800"``, as older heron versions and other writers left them), a byte that is
not UTF-8, a session file whose name is not UTF-8, a query with a lone surrogate. Each
used to stop ``heron sessions search`` and the ``search_history`` tool for the whole
home with a traceback; now the text is read as the session store reads it (U+FFFD), a
file the index cannot take is left out with a note, and the session files are untouched
and still resumable."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from heron.ai.abort import AbortSignal
from heron.ai.types import UserMessage
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import SearchHistoryParams
from heron.coding.tools.search_history import SearchHistoryTool
from heron.session.recall import RecallIndex
from heron.session.store import SessionStore


def make_session(home: Path, cwd: Path, text: str) -> SessionStore:
    store = SessionStore.create(cwd, home=home)
    store.append_message(UserMessage(content=text))
    store.materialize()
    store.close()
    return store


@pytest.fixture
def poisoned(tmp_path: Path) -> tuple[Path, Path, Path, bytes]:
    """A home with a good session and one whose lines hold an escaped lone surrogate and
    a byte that is not UTF-8; returns (home, cwd, poisoned file, its bytes)."""
    home, cwd = tmp_path / "home", tmp_path / "proj"
    cwd.mkdir()
    make_session(home, cwd, "zebra in the good session")
    bad = make_session(home, cwd, "zebra POISONA here")
    assert bad.path is not None
    store = SessionStore.open(bad.path)
    store.append_message(UserMessage(content="zebra POISONB there"))
    store.close()
    raw = bad.path.read_bytes()
    raw = raw.replace(b"POISONA", b"\\ud800 escaped").replace(b"POISONB", b"\xff\xfe raw")
    assert b"\\ud800" in raw and b"\xff" in raw
    bad.path.write_bytes(raw)
    return home, cwd, bad.path, raw


def test_a_lone_surrogate_or_a_bad_byte_in_a_line_is_indexed_as_a_replacement_character(
    poisoned: tuple[Path, Path, Path, bytes],
) -> None:
    home, _, path, raw = poisoned
    with RecallIndex(home) as index:
        result = index.search("zebra")
    assert result.notes == []
    snippets = sorted(h.snippet for h in result.hits)
    assert len(snippets) == 3, snippets  # the good session is searchable, and both bad lines
    assert any("\ufffd escaped" in s for s in snippets) and any("\ufffd\ufffd raw" in s for s in snippets)
    # nothing lost: the file is as it was and the session still opens
    assert path.read_bytes() == raw
    with SessionStore.open(path, read_only=True) as store:
        assert len(store.entries()) == 2


def test_a_query_with_a_lone_surrogate_is_searched_as_a_replacement_character(
    poisoned: tuple[Path, Path, Path, bytes],
) -> None:
    home = poisoned[0]
    with RecallIndex(home) as index:
        hits = index.search("zebra \udcff escaped").hits  # $'\xff' from a command line
    assert len(hits) == 1 and "escaped" in hits[0].snippet


def test_a_session_file_whose_name_is_not_utf8_is_left_out_with_a_note(
    poisoned: tuple[Path, Path, Path, bytes],
) -> None:
    home, _, path, _ = poisoned
    odd = path.parent / os.fsdecode(b"odd\xff.jsonl")
    odd.write_bytes(path.read_bytes())
    with RecallIndex(home) as index:
        result = index.search("zebra", scope="all")
    assert len(result.hits) == 3  # every other session is still searchable
    (note,) = result.notes
    assert "odd\ufffd.jsonl was left out of the index" in note
    assert odd.exists()


def test_the_search_history_tool_finds_other_sessions_in_a_poisoned_home(
    poisoned: tuple[Path, Path, Path, bytes],
) -> None:
    home, cwd, path, _ = poisoned
    env = ToolEnv(cwd=cwd, session_id=path.stem.split("_")[-1], home=home)
    params = SearchHistoryParams(query="zebra", scope="project")  # type: ignore[call-arg]
    result = asyncio.run(SearchHistoryTool(env).execute("c", params, AbortSignal(), lambda _: None))
    out = result.content[0].text  # type: ignore[union-attr]
    assert "good session" in out and "\ufffd escaped" in out
    out.encode("utf-8")  # what the model gets is valid UTF-8


def test_heron_sessions_search_in_a_poisoned_home(poisoned: tuple[Path, Path, Path, bytes]) -> None:
    home, cwd, path, raw = poisoned
    env = {**os.environ, "HERON_HOME": str(home)}
    cli = [sys.executable, "-m", "heron.cli.main", "sessions", "search"]
    done = subprocess.run([*cli, "zebra", "--json"], cwd=cwd, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    hits = json.loads(done.stdout.decode("utf-8"))
    assert len(hits) == 3 and any("good session" in h["snippet"] for h in hits)
    # a non-UTF-8 byte in the query itself
    done = subprocess.run([*cli, b"zebra \xff escaped"], cwd=cwd, env=env, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()
    assert "\ufffd **escaped**" in done.stdout.decode("utf-8")
    assert path.read_bytes() == raw
