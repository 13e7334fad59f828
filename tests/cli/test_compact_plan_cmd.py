"""``heron sessions compact-plan`` (a dry run of compaction on a session file) and
``heron sessions context`` (what the leaf's window holds, and the ledger)."""

from __future__ import annotations

import argparse
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from heron.agent.messages import BashExecutionMessage
from heron.ai.providers.faux import FauxProvider
from heron.ai.types import (
    AssistantMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from heron.cli import sessions_cmd, sessions_context
from heron.cli.main import main
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE, LedgerRecord
from heron.context.window.budget import estimate_context_tokens
from heron.session.store import SessionStore


def run(*argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="heron")
    sessions_cmd.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sessions", *argv])
    out, err = io.StringIO(), io.StringIO()
    code = sessions_cmd.run(args, out, err)
    return code, out.getvalue(), err.getvalue()


def plan_json(*argv: str) -> dict[str, Any]:
    code, out, err = run("compact-plan", *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)], timestamp=1)


def assistant(text: str, calls: list[ToolCall] | None = None, usage: Usage | None = None) -> AssistantMessage:
    return AssistantMessage(
        api="faux",
        provider="faux",
        model="faux-1",
        content=[TextContent(text=text), *(calls or [])],
        usage=usage or Usage(),
        timestamp=2,
        stop_reason=StopReason.TOOL_USE if calls else StopReason.STOP,
    )


def result(call_id: str, text: str, name: str = "read") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], timestamp=3)


@pytest.fixture(autouse=True)
def no_model_calls(monkeypatch: pytest.MonkeyPatch) -> None:
    """A dry run never talks to a model."""
    import heron.ai.registry as registry

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("compact-plan called a model")

    monkeypatch.setattr(registry, "stream", refuse)
    monkeypatch.setattr(registry, "complete", refuse)


@pytest.fixture
def session_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """0 user, 1 assistant(read a.py), 2 result, 3 assistant, 4 model_change, 5 label,
    6 user, 7 assistant(edit b.py), 8 result, 9 custom (ledger), 10 assistant(read c.py),
    11 result, 12 assistant - 100 tokens per message unless said otherwise."""
    store = SessionStore.create(tmp_path, path=tmp_path / "s.jsonl")
    ids = [
        store.append_message(user("first request " + "u" * 386)).id,
        store.append_message(assistant("a" * 390, [ToolCall(id="c1", name="read", arguments={"path": "a.py"})])).id,
        store.append_message(result("c1", "r" * 400)).id,
        store.append_message(assistant("a" * 400)).id,
        store.append_model_change("faux", "faux-2").id,
        store.set_label(store.leaf_id or "", "checkpoint").id,
        store.append_message(user("second request " + "u" * 385)).id,
        store.append_message(assistant("a" * 380, [ToolCall(id="c2", name="edit", arguments={"path": "b.py"})])).id,
        store.append_message(result("c2", "r" * 400, "edit")).id,
        store.append_custom(
            LEDGER_CUSTOM_TYPE,
            LedgerRecord(
                kind="truncate", ref="c2", tool="edit", chars_before=9_000, chars_after=400, recover="read it again"
            ).to_json_dict(),
        ).id,
        store.append_message(assistant("a" * 380, [ToolCall(id="c3", name="read", arguments={"path": "c.py"})])).id,
        store.append_message(result("c3", "r" * 400)).id,
        store.append_message(assistant("a" * 400, usage=Usage(input=1_500, output=100))).id,
    ]
    store.close()
    return tmp_path / "s.jsonl", ids


def test_plan_of_a_session_file(session_file: tuple[Path, list[str]]) -> None:
    path, ids = session_file
    before = path.read_bytes()
    mtime = os.stat(path).st_mtime_ns
    plan = plan_json(str(path), "--keep-recent-tokens", "250")
    # walking back: 100 (12), 200 (11), 300 (10) reaches 250 at the assistant at 10, a cut
    # point; the ledger record before it travels with it (9). The turn was started by the
    # user message at 6: a split turn
    assert plan["compact"] is True
    assert plan["first_kept_index"] == 9 and plan["first_kept_entry_id"] == ids[9]
    assert plan["split_turn"] is True and plan["turn_start_index"] == 6
    assert plan["messages_to_summarize"] == 4  # 0-3 (the model change and label are no messages)
    assert plan["turn_prefix_messages"] == 3  # 6, 7, 8 (the ledger record at 9 is no message)
    assert plan["read_files"] == ["a.py"] and plan["modified_files"] == ["b.py"]
    assert plan["previous_summary"] is False and plan["user_requests"] == 2
    assert plan["keep_recent_tokens"] == 250 and plan["reserve_tokens"] == 16_384
    assert plan["region_start_index"] == 0 and plan["leaf_index"] == 12 and plan["path_length"] == 13
    store = SessionStore.open(path, read_only=True)
    assert plan["tokens_before"] == estimate_context_tokens(store.build_context().messages) == 1_600
    # nothing was written
    assert path.read_bytes() == before and os.stat(path).st_mtime_ns == mtime


def test_labels_and_settings_travel_with_the_cut(session_file: tuple[Path, list[str]]) -> None:
    path, _ = session_file
    plan = plan_json(str(path), "--keep-recent-tokens", "550")
    # 550 is reached at the user message at 6; the model change and the label before it
    # travel with it, and the cut is judged by that user message: a clean boundary
    assert plan["first_kept_index"] == 4
    assert plan["split_turn"] is False and plan["turn_start_index"] == -1
    assert plan["messages_to_summarize"] == 4 and plan["turn_prefix_messages"] == 0


def test_default_settings_and_nothing_to_compact(session_file: tuple[Path, list[str]]) -> None:
    path, _ = session_file
    plan = plan_json(str(path))  # 20,000 tokens kept: everything fits
    assert plan["compact"] is False and plan["reason"] == "everything fits in the keep-recent budget"
    assert plan["first_kept_index"] is None and plan["turn_start_index"] == -1
    assert plan["messages_to_summarize"] == 0 and plan["keep_recent_tokens"] == 20_000


def test_after_a_compaction(tmp_path: Path, session_file: tuple[Path, list[str]]) -> None:
    path, ids = session_file
    store = SessionStore.open(path)
    store.append_compaction("## Goal\nearlier", ids[6], 1_600, {"readFiles": ["z.py"], "modifiedFiles": ["y.py"]})
    store.close()
    plan = plan_json(str(path), "--keep-recent-tokens", "250")
    assert plan["compact"] is False and plan["reason"] == "the leaf is a compaction"
    assert plan["previous_summary"] is True
    store = SessionStore.open(path)
    store.append_message(user("third request " + "u" * 386))  # 14
    store.append_message(assistant("a" * 380, [ToolCall(id="c4", name="write", arguments={"path": "z.py"})]))
    store.append_message(result("c4", "ok", "write"))  # 16
    store.append_message(assistant("a" * 400))
    store.append_message(user("fourth request " + "u" * 385))  # 18
    store.append_message(assistant("a" * 400))
    store.close()
    plan = plan_json(str(path), "--keep-recent-tokens", "150")
    assert plan["previous_summary"] is True
    assert plan["region_start_index"] == 6  # the previous compaction's first kept entry
    assert plan["first_kept_index"] == 18 and plan["split_turn"] is False
    # 6, 7, 8, 10, 11, 12 were kept by the compaction (at 13) and are summarised now; then 14-17
    assert plan["messages_to_summarize"] == 10
    assert plan["read_files"] == ["c.py"]  # z.py was read before, and has been written since
    assert plan["modified_files"] == ["y.py", "b.py", "z.py"]
    assert plan["user_requests"] == 2  # the second and third requests (the first was summarised before)


def test_text_output_and_bad_arguments(
    session_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = session_file
    code, out, _ = run("compact-plan", str(path), "--keep-recent-tokens", "250")
    assert code == 0
    assert "first_kept_index: 9" in out and "split_turn: True" in out and "read_files: a.py" in out
    for bad in ("0", "-5", "many"):
        with pytest.raises(SystemExit) as exit_:
            run("compact-plan", str(path), "--keep-recent-tokens", bad)
        assert exit_.value.code == 2
    assert "--keep-recent-tokens" in capsys.readouterr().err
    code, _, err = run("compact-plan", str(path.parent / "missing.jsonl"))
    assert code == 1 and "heron sessions:" in err


def test_through_the_heron_command(session_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = session_file
    assert main(["sessions", "compact-plan", str(path), "--keep-recent-tokens", "250", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_kept_index"] == 9
    assert main(["sessions", "context", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == 1_600


# --- context ---------------------------------------------------------------------------------------


def test_context_json(session_file: tuple[Path, list[str]]) -> None:
    path, ids = session_file
    store = SessionStore.open(path)
    store.branch(ids[3])  # a record on another branch is not the leaf's
    store.append_custom(LEDGER_CUSTOM_TYPE, LedgerRecord(kind="spill", chars_before=1, chars_after=0).to_json_dict())
    store.branch(ids[12])
    store.append_message(BashExecutionMessage(command="ls", output="x" * 96))
    store.append_compaction("s" * 400, ids[6], 1_600)
    store.append_custom(
        LEDGER_CUSTOM_TYPE,
        LedgerRecord(
            kind="compaction", ref="x", chars_before=8_000, chars_after=400, recover="in the file"
        ).to_json_dict(),
    )
    store.close()
    code, out, _ = run("context", str(path), "--json", "--window", "16384")
    assert code == 0
    data = json.loads(out)
    assert data["window"] == 16_384 and data["threshold"] == 16_384 - 4_096
    assert data["system_prompt"] is None and data["tools"] is None and data["context_files"] is None
    assert data["summaries"] == 100
    assert data["messages"] == {"user": 100, "assistant": 300, "toolResult": 200, "bashExecution": 25}
    assert data["total"] == 100 + 625  # the reply's usage predates the compaction: all estimated
    kinds = [r["kind"] for r in data["ledger"]]
    assert kinds == ["truncate", "compaction"]  # not the spill on the other branch
    assert data["ledger"][0]["recover"] == "read it again"
    assert data["ledger_saved_tokens"] == {"truncate": 2_250 - 100, "compaction": 2_000 - 100}


def test_context_text(session_file: tuple[Path, list[str]]) -> None:
    path, _ = session_file
    code, out, _ = run("context", str(path))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "in use 1,600 tokens (window not known: pass --window to see shares)"
    assert any("system prompt, tools, context files" in line and "not known" in line for line in lines)
    assert any(line.split()[:2] == ["messages:", "assistant"] and line.split()[2] == "503" for line in lines)
    assert any("total (last reported usage + after it)" in line and "1,600" in line for line in lines)
    assert "ledger: 1 record(s); tokens kept out of view by kind: truncate 2,150" in lines
    assert lines[-1].startswith("  truncate edit [c2]: 2,250 -> 100 tokens; read it again")
    code, out, _ = run("context", str(path), "--window", "8000")
    assert out.splitlines()[0] == "window 8,000 tokens; compaction above 6,000; in use 1,600 (20.0%)"


def test_formatter_is_shared_with_a_live_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, faux: FauxProvider
) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "home"))
    session = CodingSession(cwd=tmp_path, model=faux.model(context_window=32_000), settings=settings_from_dict({}))
    session.agent.state.messages[:] = [user("q" * 400)]
    lines = sessions_context.format_context_breakdown(session.context_breakdown())
    assert lines[0].startswith("window 32,000 tokens; compaction above 24,000; in use ")
    assert lines[1].startswith("working budget ")  # priced: the budget, why, and its break-even
    names = [line[:40].strip() for line in lines[2:6]]
    assert names == ["system prompt", "of which context files", "tools", "of which the script tool"]
    assert any(line.split()[:3] == ["messages:", "user", "100"] for line in lines)
    data = sessions_context.breakdown_json(session.context_breakdown())
    assert data["system_prompt"] > 0 and data["tools"] > 0 and data["messages"] == {"user": 100}
    assert 50 < data["program_tools"]["script"] < data["tools"]  # the script tool's own overhead
