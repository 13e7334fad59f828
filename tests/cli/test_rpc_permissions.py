"""rpc ``permission_request`` / ``permission_response`` through the real ``heron --mode
rpc`` subprocess against a local OpenAI-compatible server: allow once, allow always (the
rule lands in .heron/settings.local.json and the next call is not asked about), deny with
a reason the model sees, no answer in time, abort while waiting, and bad answers."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.cli.modes.run_end import answer_at
from tests.cli.test_rpc_mode import Client, request_messages, turn
from tests.support.http_server import LocalServer

ASK = {"permissions": {"ask": ["Bash(touch:*)"]}}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    (path / "settings.json").write_text(json.dumps(ASK))
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
def rpc(
    local_server: LocalServer, workdir: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Client]]:
    clients: list[Client] = []

    def start(timeout_ms: int | None = None) -> Client:
        if timeout_ms is not None:
            monkeypatch.setenv("HERON_PERMISSION_TIMEOUT_MS", str(timeout_ms))
        client = Client(local_server, workdir, home)
        clients.append(client)
        return client

    yield start
    for client in clients:
        client.kill()


def touch(name: str, call_id: str = "call_1") -> Any:
    return turn("", [(call_id, "bash", {"command": f"touch {name}"})])


def request(client: Client) -> dict[str, Any]:
    return client.until(lambda o: o["type"] == "permission_request")


def tool_result_text(server: LocalServer, index: int) -> str:
    return json.dumps(request_messages(server, index)[-1]["content"])


def test_allow_once_runs_the_call_and_asks_again_next_time(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    local_server.queue(touch("a.txt"), turn("Made it."))
    client = rpc()
    accepted = client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    assert asked["id"] == "perm-1" and asked["toolCallId"] == "call_1" and asked["toolName"] == "bash"
    assert asked["input"] == {"command": "touch a.txt"} and asked["rule"] == "Bash(touch:*)"
    assert asked["options"] == ["allow_once", "allow_always", "deny"] and asked["timeout"] == 300_000
    assert 'ask rule "Bash(touch:*)"' in asked["message"] and asked["suggestion"]
    assert not (workdir / "a.txt").exists()  # the call waits for the answer
    state = client.call({"type": "get_state"})["data"]
    assert state["isStreaming"] is True  # other commands are served meanwhile
    client.send({"type": "permission_response", "id": asked["id"], "decision": "allow_once"})
    resolved = client.until(lambda o: o["type"] == "permission_resolved")
    assert resolved == {
        "type": "permission_resolved",
        "id": "perm-1",
        "toolCallId": "call_1",
        "decision": "allow_once",
        "by": "client",
        "reason": None,
    }
    end = client.until(lambda o: o["type"] == "run_end" and o["id"] == accepted["id"])
    assert answer_at(client.seen, end) == "Made it." and (workdir / "a.txt").exists()
    assert not (workdir / ".heron" / "settings.local.json").exists()
    # once only: the same command asks again
    local_server.queue(touch("b.txt", "call_2"), turn("Again."))
    client.call({"type": "prompt", "message": "make b.txt"})
    again = client.until(lambda o: o["type"] == "permission_request" and o["toolCallId"] == "call_2")
    assert again["id"] == "perm-2"
    client.send({"type": "permission_response", "id": "perm-2", "decision": "allow_once"})
    assert client.until(lambda o: o["type"] == "run_end" and answer_at(client.seen, o) == "Again.")
    assert client.close() == 0


def test_allow_always_saves_the_rule_and_is_not_asked_again(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    # a write outside the project asks (no rule needed); "allow always" saves the rule that allows it
    outside = workdir.parent / "outside" / "out.txt"
    outside.parent.mkdir()

    def write(text: str, call_id: str) -> Any:
        return turn("", [(call_id, "write", {"path": str(outside), "content": text})])

    local_server.queue(write("one", "call_1"), turn("One."), write("two", "call_2"), turn("Two."))
    client = rpc()
    client.call({"type": "prompt", "message": "write it"})
    asked = request(client)
    assert asked["toolName"] == "write" and asked["rule"] is None and "outside the project" in asked["message"]
    client.send({"type": "permission_response", "id": asked["id"], "decision": "allow_always"})
    client.until(lambda o: o["type"] == "run_end" and answer_at(client.seen, o) == "One.")
    local = json.loads((workdir / ".heron" / "settings.local.json").read_text())
    assert local["permissions"]["allow"] == [asked["suggestion"]]
    client.call({"type": "prompt", "message": "write it again"})
    client.until(lambda o: o["type"] == "run_end" and answer_at(client.seen, o) == "Two.")
    assert outside.read_text() == "two"
    assert [o for o in client.seen if o["type"] == "permission_request"] == [asked]
    assert client.close() == 0


def test_allow_always_on_an_ask_rule_holds_for_the_process_and_writes_nothing(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    # an explicit ask rule beats any allow rule, so a saved rule could not answer it again
    local_server.queue(touch("a.txt"), turn("One."), touch("b.txt", "call_2"), turn("Two."))
    client = rpc()
    client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    assert asked["rule"] == "Bash(touch:*)"
    client.send({"type": "permission_response", "id": asked["id"], "decision": "allow_always"})
    client.until(lambda o: o["type"] == "run_end" and answer_at(client.seen, o) == "One.")
    client.call({"type": "prompt", "message": "make b.txt"})
    client.until(lambda o: o["type"] == "run_end" and answer_at(client.seen, o) == "Two.")
    assert (workdir / "a.txt").exists() and (workdir / "b.txt").exists()
    assert [o for o in client.seen if o["type"] == "permission_request"] == [asked]
    assert not (workdir / ".heron" / "settings.local.json").exists()
    assert client.close() == 0


def test_deny_with_a_reason_the_model_sees(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    local_server.queue(touch("a.txt"), turn("Understood."))
    client = rpc()
    client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    client.send(
        {"type": "permission_response", "id": asked["id"], "decision": "deny", "reason": "not in this directory"}
    )
    end = client.until(lambda o: o["type"] == "run_end")
    assert answer_at(client.seen, end) == "Understood." and not (workdir / "a.txt").exists()
    tool_end = next(o for o in client.seen if o["type"] == "tool_execution_end")
    assert tool_end["isError"] is True
    assert "not in this directory" in tool_result_text(local_server, 1)
    assert client.close() == 0


def test_no_answer_in_time_is_a_denial_that_says_so(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    local_server.queue(touch("a.txt"), turn("Nobody answered."))
    client = rpc(timeout_ms=300)
    client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    assert asked["timeout"] == 300
    resolved = client.until(lambda o: o["type"] == "permission_resolved")
    assert resolved["by"] == "timeout" and resolved["decision"] == "deny" and "0.3 s" in resolved["reason"]
    end = client.until(lambda o: o["type"] == "run_end")
    assert answer_at(client.seen, end) == "Nobody answered." and not (workdir / "a.txt").exists()
    assert "no answer to the permission request within 0.3 s" in tool_result_text(local_server, 1)
    late = client.call({"type": "permission_response", "id": asked["id"], "decision": "allow_once"})
    assert late["success"] is False and "no open permission request 'perm-1'" in late["error"]
    assert client.close() == 0


def test_abort_while_waiting_denies_and_ends_the_run(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    local_server.queue(touch("a.txt"))
    client = rpc()
    accepted = client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    aborted = client.call({"type": "abort"})
    assert aborted["success"] is True and aborted["data"]["wasRunning"] is True
    resolved = next(o for o in client.seen if o["type"] == "permission_resolved")
    assert resolved["id"] == asked["id"] and resolved["by"] == "abort" and resolved["decision"] == "deny"
    end = next(o for o in client.seen if o["type"] == "run_end")
    assert end["id"] == accepted["id"] and end["stop_reason"] == "aborted"
    assert next(o for o in client.seen if o["type"] == "agent_settled")["aborted"] is True
    assert not (workdir / "a.txt").exists() and len(local_server.requests) == 1
    assert client.close() == 0


def test_bad_answers_get_errors_and_the_question_stays_open(
    local_server: LocalServer, rpc: Callable[..., Client], workdir: Path
) -> None:
    local_server.queue(touch("a.txt"), turn("Fine."))
    client = rpc()
    client.call({"type": "prompt", "message": "make a.txt"})
    asked = request(client)
    bad = [
        ({"type": "permission_response", "id": asked["id"], "decision": "sure"}, '"decision" must be one of'),
        ({"type": "permission_response", "id": asked["id"]}, 'missing "decision"'),
        ({"type": "permission_response", "id": "perm-77", "decision": "deny"}, "open: perm-1"),
    ]
    for command, _ in bad:
        client.send(command)  # the response carries the request's id, as the command did

    def answers() -> list[dict[str, Any]]:
        return [o for o in client.seen if o["type"] == "response" and o["command"] == "permission_response"]

    client.until(lambda o: len(answers()) == len(bad))
    assert len(answers()) == len(bad)
    for (command, error), answer in zip(bad, answers(), strict=True):
        assert answer["success"] is False and error in answer["error"], (command, answer)
    client.send_raw(b'{"type":"permission_response","decision":"deny"}\n')
    nameless = client.until(
        lambda o: o["type"] == "response" and o["command"] == "permission_response" and o["id"] is None
    )
    assert nameless["success"] is False and 'missing "id"' in nameless["error"]
    # pi's extension-UI form of a dismissed dialog counts as a denial
    client.send({"type": "permission_response", "id": asked["id"], "cancelled": True})
    assert client.until(lambda o: o["type"] == "permission_resolved")["decision"] == "deny"
    assert answer_at(client.seen, client.until(lambda o: o["type"] == "run_end")) == "Fine."
    assert client.close() == 0


def test_the_timeout_comes_from_the_environment_then_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from heron.cli.modes.rpc_permissions import DEFAULT_TIMEOUT_MS, ask_timeout_ms

    home, cwd = tmp_path / "h", tmp_path / "p"
    (cwd / ".heron").mkdir(parents=True)
    home.mkdir()
    monkeypatch.delenv("HERON_PERMISSION_TIMEOUT_MS", raising=False)
    assert ask_timeout_ms(cwd, home) == DEFAULT_TIMEOUT_MS
    (home / "settings.json").write_text(json.dumps({"permissions": {"askTimeoutMs": 60_000}}))
    assert ask_timeout_ms(cwd, home) == 60_000
    (cwd / ".heron" / "settings.local.json").write_text(json.dumps({"permissions": {"askTimeoutMs": 0}}))
    assert ask_timeout_ms(cwd, home) == 0  # the local file wins; 0 waits for ever
    (cwd / ".heron" / "settings.local.json").write_text(json.dumps({"permissions": {"askTimeoutMs": "soon"}}))
    assert ask_timeout_ms(cwd, home) == 60_000  # a bad value is skipped, and said so
    assert "settings.local.json: permissions.askTimeoutMs must be a number of milliseconds >= 0, got 'soon'" in (
        capsys.readouterr().err
    )
    monkeypatch.setenv("HERON_PERMISSION_TIMEOUT_MS", "1500")
    assert ask_timeout_ms(cwd, home) == 1500
    monkeypatch.setenv("HERON_PERMISSION_TIMEOUT_MS", "-4")
    assert ask_timeout_ms(cwd, home) == 60_000
    assert "HERON_PERMISSION_TIMEOUT_MS='-4' is not a number" in capsys.readouterr().err
