"""``heron sessions list | info | tree``."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from heron.cli.main import main
from heron.session.store import SessionStore
from tests.session.support import PI_SESSIONS, REPO, assistant, chain, generate_pi_session, header, user, write_jsonl
from tests.support.fixtures import needs_shared


def run(*argv: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def info_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    code, out, _ = run("sessions", "info", str(path), "--json", capsys=capsys)
    assert code == 0
    data: dict[str, Any] = json.loads(out)
    return data


@needs_shared(PI_SESSIONS)
def test_info_json_on_pis_compacted_session(capsys: pytest.CaptureFixture[str]) -> None:
    info = info_json(PI_SESSIONS / "before-compaction.jsonl", capsys)
    assert info["version"] == 3 and info["source_version"] == 1
    assert info["entries"] == 1002
    assert info["by_type"] == {"message": 990, "thinking_level_change": 5, "model_change": 5, "compaction": 2}
    assert info["by_role"] == {"user": 55, "assistant": 484, "toolResult": 448, "bashExecution": 3}
    assert info["leaf_index"] == 1001
    assert info["context_messages"] == 446 and info["context_first_role"] == "compactionSummary"
    assert info["model"] == "anthropic/claude-opus-4-5" and info["thinking_level"] == "off"
    assert isinstance(info["estimated_context_tokens"], int) and info["estimated_context_tokens"] > 100_000
    assert info["warnings"] == []


@needs_shared(PI_SESSIONS)
def test_info_json_on_pis_large_session(capsys: pytest.CaptureFixture[str]) -> None:
    info = info_json(PI_SESSIONS / "large-session.jsonl", capsys)
    assert info["entries"] == 1018 and info["leaf_index"] == 1017
    assert info["by_type"] == {"message": 914, "thinking_level_change": 103, "model_change": 1}
    assert info["by_role"] == {"user": 88, "assistant": 453, "toolResult": 373}
    assert info["context_messages"] == 914 and info["context_first_role"] == "user"
    assert info["model"] == "anthropic/claude-sonnet-4-5" and info["thinking_level"] == "off"


def test_estimated_context_tokens_is_last_usage_plus_what_follows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from heron.ai.types import Usage

    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("x" * 400))
    store.append_message(assistant("y", usage=Usage(input=50, output=10, cache_read=900, cache_write=40)))
    store.append_message(user("z" * 41))  # ceil(41 / 4) = 11
    store.close()
    info = info_json(tmp_path / "s.jsonl", capsys)
    assert info["estimated_context_tokens"] == 1000 + 11
    assert info["by_role"] == {"user": 2, "assistant": 1} and info["leaf_index"] == 2


def test_info_text_and_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_jsonl(tmp_path / "s.jsonl", [header(), *chain(3), "garbage"])
    code, out, err = run("sessions", "info", str(path), capsys=capsys)
    assert code == 0
    assert "context_messages: 3" in out and "leaf_index: 2" in out
    assert "warning: line 5: malformed entry skipped" in err


def test_list(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    proj = tmp_path / "proj"
    store = SessionStore.create(proj)
    store.append_message(user("please refactor the parser"))
    store.append_message(assistant("sure"))
    store.close()
    code, out, _ = run("sessions", "list", "--cwd", str(proj), capsys=capsys)
    assert code == 0
    assert "please refactor the parser" in out and store.session_id[:8] in out and "2 msgs" in out
    code, out, _ = run("sessions", "list", "--all", capsys=capsys)
    assert code == 0 and str(proj) in out
    code, out, _ = run("sessions", "list", "--cwd", str(tmp_path / "empty"), capsys=capsys)
    assert out.strip() == "no sessions"
    # by id prefix
    code, out, _ = run("sessions", "info", store.session_id[:6], "--json", capsys=capsys)
    assert code == 0 and json.loads(out)["id"] == store.session_id


def test_tree_draws_branches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    a = store.append_message(user("start"))
    b = store.append_message(assistant("first answer"))
    store.append_message(user("left branch"))
    store.branch(b.id)
    store.append_message(user("right branch"))
    store.set_label(a.id, "origin")
    store.close()
    code, out, _ = run("sessions", "tree", str(tmp_path / "s.jsonl"), capsys=capsys)
    assert code == 0
    lines = out.splitlines()[1:]
    assert lines[0].startswith(f"[0] {a.id} user: start [origin]")
    assert lines[1].startswith("[1] ")
    assert lines[2].startswith("├─ [2] ") and "left branch" in lines[2]
    assert lines[3].startswith("└─ [3] ") and "right branch" in lines[3]
    # what follows the last branch is indented under it, as under the other branches
    assert lines[4].startswith("   [4] ") and lines[4].endswith("<- leaf")


def test_children_of_the_last_branch_are_indented_like_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("start"))
    fork = store.append_message(assistant("first answer"))
    store.append_message(user("left question"))
    store.append_message(assistant("left answer"))
    store.branch(fork.id)
    store.append_message(user("right question"))
    store.append_message(assistant("right answer"))
    store.close()
    code, out, _ = run("sessions", "tree", str(tmp_path / "s.jsonl"), capsys=capsys)
    assert code == 0
    body = out.splitlines()[1:]
    left = next(line for line in body if "left answer" in line)
    right = next(line for line in body if "right answer" in line)
    fork_line = next(line for line in body if "first answer" in line)
    column = left.index("[")
    assert right.index("[") == column, body  # both branches' children at one indentation
    assert column > fork_line.index("["), body  # deeper than the branch point


def test_tree_of_a_generated_pi_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pi.jsonl"
    stats = generate_pi_session(path, 1500)
    code, out, _ = run("sessions", "tree", str(path), capsys=capsys)
    assert code == 0
    body = out.splitlines()[1:]
    assert len(body) == 1500
    assert sum("├─" in line for line in body) == stats["branches"]  # each branch point has two children
    assert body[-1].endswith("<- leaf")


def test_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path))
    code, _, err = run("sessions", "info", "no-such-session", capsys=capsys)
    assert code == 1 and "no session file or session id" in err


def test_version_still_works_and_stays_light() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "--version"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0 and done.stdout.startswith("heron ")
    probe = (
        "import sys\n"
        "from heron.cli.main import main\n"
        "try:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('heron.') and m not in ('heron.cli', 'heron.cli.main',"
        " 'heron.cli.sessions_cmd', 'heron.cli.boot',"
        # the tool names of --tools' help: a module without imports, in a package that loads lazily
        " 'heron.coding', 'heron.coding.tool_names')))\n"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=True)
    assert loaded.stdout.strip().splitlines()[-1] == "[]"


@needs_shared(PI_SESSIONS)
def test_run_writes_to_given_streams(tmp_path: Path) -> None:
    import argparse

    from heron.cli.sessions_cmd import run as run_sessions

    out, err = io.StringIO(), io.StringIO()
    args = argparse.Namespace(sessions_command="info", file=str(PI_SESSIONS / "large-session.jsonl"), json=True)
    assert run_sessions(args, out, err) == 0
    assert json.loads(out.getvalue())["entries"] == 1018


# --- delete -------------------------------------------------------------------------------------


def saved_session(home: Path, cwd: Path) -> SessionStore:
    store = SessionStore.create(cwd, home=home)
    store.append_message(user("hi"))
    store.append_message(assistant("hello"))
    return store


def test_delete_removes_the_file_and_its_spill_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HERON_HOME", str(home))
    store = saved_session(home, tmp_path)
    other = saved_session(home, tmp_path)
    store.close()
    other.close()
    assert store.path is not None and other.path is not None
    spills = home / "tool-output" / store.session_id
    spills.mkdir(parents=True)
    (spills / "bash-call_1.log").write_text("lots of output")
    (home / "tool-output" / other.session_id).mkdir()
    code, out, err = run("sessions", "delete", store.session_id[:8], "--yes", capsys=capsys)
    assert code == 0, err
    assert out.splitlines() == [f"deleted {store.path}", f"deleted {spills}"]
    assert not store.path.exists() and not spills.exists()
    assert other.path.exists() and (home / "tool-output" / other.session_id).is_dir()  # another session's stay


def test_delete_is_refused_while_the_session_is_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HERON_HOME", str(home))
    store = saved_session(home, tmp_path)  # open for writing: holds the lock (in this process)
    assert store.path is not None
    code, _, err = run("sessions", "delete", str(store.path), "--yes", capsys=capsys)
    assert code == 1 and "session is already open in this process" in err
    assert store.path.exists()
    store.close()


def test_delete_needs_yes_without_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HERON_HOME", str(home))
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    store = saved_session(home, tmp_path)
    store.close()
    assert store.path is not None
    code, _, err = run("sessions", "delete", str(store.path), capsys=capsys)
    assert code == 2 and "needs --yes" in err
    assert store.path.exists()


def test_delete_does_not_follow_a_hostile_session_id(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HERON_HOME", str(home))
    keep = home / "keep"
    keep.mkdir(parents=True)
    path = write_jsonl(tmp_path / "evil.jsonl", [header(id="../keep"), *chain(2)])
    code, out, err = run("sessions", "delete", str(path), "--yes", capsys=capsys)
    assert code == 0 and out.splitlines() == [f"deleted {path}"]
    assert "cannot name a folder" in err
    assert keep.is_dir()


def test_info_counts_come_from_the_stats_module(tmp_path: Path) -> None:
    from heron.cli.sessions_cmd import session_info
    from heron.session.stats import session_stats

    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    store.append_message(user("q"))
    store.append_model_change("p", "m")
    store.append_message(assistant("a"))
    stats = session_stats(store)
    assert (stats.entries, stats.messages) == (3, 2)
    assert stats.by_type == {"message": 2, "model_change": 1} and stats.by_role == {"user": 1, "assistant": 1}
    assert stats.describe_types() == "3 (message 2, model_change 1)" and stats.describe_roles() == "assistant 1, user 1"
    info = session_info(store)
    assert (info["entries"], info["by_type"], info["by_role"]) == (3, stats.by_type, stats.by_role)
