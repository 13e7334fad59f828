"""Where session files live; listing, --continue and opening by id prefix."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from heron.session.naming import encode_cwd, heron_home, session_dir, session_file_name, session_id_of, sessions_root
from heron.session.paths import (
    AmbiguousSessionError,
    SessionNotFoundError,
    latest_session,
    list_sessions,
    resolve_session,
    summarize,
)
from heron.session.store import SessionStore
from tests.session.support import PI_SESSIONS, assistant, user
from tests.support.fixtures import needs_shared


def test_cwd_encoding_is_pis() -> None:
    # the directory pi uses for the fixtures' cwd (see before-compaction.jsonl's branchedFrom)
    assert encode_cwd("/Users/badlogic/workspaces/pi-mono") == "--Users-badlogic-workspaces-pi-mono--"
    assert encode_cwd("/") == "----"
    assert encode_cwd("C:\\Users\\me\\proj") == "--C--Users-me-proj--"
    assert encode_cwd("\\\\server\\share") == "---server-share--"


def test_file_names_are_pis() -> None:
    name = session_file_name("2025-12-09T00:52:54.397Z", "d97339c6-6c10-4827-846b-9ff1d9c3dc37")
    assert name == "2025-12-09T00-52-54-397Z_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl"
    assert session_id_of(Path(name)) == "d97339c6-6c10-4827-846b-9ff1d9c3dc37"


def test_heron_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HERON_HOME", raising=False)
    assert heron_home() == Path.home() / ".heron"
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    assert sessions_root() == tmp_path / "sessions"
    assert session_dir("/a/b") == tmp_path / "sessions" / "--a-b--"


def make_session(cwd: Path, home: Path, *texts: str, name: str | None = None) -> Path:
    store = SessionStore.create(cwd, home=home)
    for n, text in enumerate(texts):
        store.append_message(user(text))
        store.append_message(assistant(f"answer {n}"))
    if name:
        store.set_name(name)
    assert store.path is not None
    store.close()
    return store.path


def test_listing_continue_and_prefix(tmp_path: Path) -> None:
    home = tmp_path / "home"
    proj, other = tmp_path / "proj", tmp_path / "other"
    older = make_session(proj, home, "first question", "second")
    newer = make_session(proj, home, "fix the bug", name="bug hunt")
    elsewhere = make_session(other, home, "unrelated")
    now = time.time()
    os.utime(older, (now - 100, now - 100))
    os.utime(newer, (now - 10, now - 10))
    os.utime(elsewhere, (now, now))
    listed = list_sessions(proj, home=home)
    assert [s.path for s in listed] == [newer, older]
    assert listed[0].name == "bug hunt" and listed[0].first_message == "fix the bug"
    assert listed[1].name is None and listed[1].first_message == "first question"
    assert listed[1].message_count == 4 and listed[0].message_count == 2 and listed[0].entry_count == 3
    assert listed[0].cwd == str(proj) and listed[0].modified == pytest.approx(now - 10)
    assert [s.path for s in list_sessions(all_cwds=True, home=home)] == [elsewhere, newer, older]
    assert latest_session(proj, home=home) == newer
    assert latest_session(tmp_path / "nothing", home=home) is None
    assert resolve_session(newer, home=home) == newer
    assert resolve_session(session_id_of(newer)[:8], home=home) == newer
    assert resolve_session(session_id_of(elsewhere).upper(), home=home) == elsewhere
    with pytest.raises(SessionNotFoundError):
        resolve_session("ffffffff-no-such", home=home)
    with pytest.raises(SessionNotFoundError):
        resolve_session(str(tmp_path / "missing.jsonl"), home=home)


def test_an_ambiguous_prefix_lists_the_candidates(tmp_path: Path) -> None:
    home = tmp_path / "home"
    directory = session_dir(tmp_path, home)
    directory.mkdir(parents=True)
    a = directory / "2026-01-01T00-00-00-000Z_abc11111-0000-4000-8000-000000000000.jsonl"
    b = directory / "2026-01-02T00-00-00-000Z_abc22222-0000-4000-8000-000000000000.jsonl"
    for path in (a, b):
        path.write_text('{"type":"session","version":3,"id":"x","timestamp":"t","cwd":"/"}\n')
    with pytest.raises(AmbiguousSessionError) as err:
        resolve_session("abc", home=home)
    assert err.value.candidates == [a, b] and str(a) in str(err.value) and str(b) in str(err.value)
    assert resolve_session("abc2", home=home) == b


@needs_shared(PI_SESSIONS)
def test_summaries_of_pi_files() -> None:
    summary = summarize(PI_SESSIONS / "large-session.jsonl")
    assert summary.message_count == 914 and summary.entry_count == 1018
    assert summary.first_message == "/mode"
    assert summary.id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
