"""Provider-native compaction through the real ``heron`` command (docs/context.md,
"Provider-native compaction"), against a scripted server that speaks Anthropic's and
OpenAI Responses' server-side compaction (``tests/cli/native_harness.py``), enforces a
16k window and compacts when the trigger heron sends is crossed.

- a 16k session with at least three native compactions sends no request over the window,
  and one ``heron --mode rpc`` process sends byte for byte what ``heron -p --continue``
  (a new process per turn) sends;
- the session then resumed on the OpenAI chat wire gets heron's own summary of what the
  native block covered, never the opaque block;
- a server that rejects the ``context_management`` field, and one whose compaction blocks
  carry no summary, leave the session to heron's own compaction (recorded).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.cli.audit_harness import PRUNED, Rpc, Step, make_project, normalised, read, run_print, serve, servers
from tests.cli.native_harness import NATIVE_MARK, NativeServer
from tests.support.http_server import LocalServer
from tests.support.summaries import is_summary_body, is_summary_text

__all__ = ["servers"]  # the fixture, from the harness

WINDOW = {"contextWindow": 16_384, "maxTokens": 2_048}
MODELS = {"anthropic-messages": "anth/claude-n", "openai-responses": "resp/gpt-n", "chat": "chat/chat-n"}
LIMITS = {"claude-n": 16_384, "gpt-n": 16_384, "chat-n": 16_384}
TURNS = 8


def _reads(turn: int) -> list[Step]:
    start = 1 + turn * 130
    return [
        read(f"data/file{turn % 4}.txt", offset=start, limit=60),
        read(f"data/file{(turn + 1) % 4}.txt", offset=start + 60, limit=60),
    ]


PLAN: dict[int, list[Step]] = {turn: _reads(turn) for turn in range(TURNS + 2)}


def project(
    root: Path,
    made: list[LocalServer],
    handler: NativeServer,
    *,
    pruning: bool = True,
    anth: dict[str, bool] | None = None,
) -> tuple[Path, dict[str, str]]:
    """A project whose models.json has the three wires on one server: Anthropic with
    native compaction in its own models.json entry, Responses with it from the settings.
    ``pruning`` off: only a compaction keeps the session in the window."""
    url = serve(made, handler)
    settings = {"compaction": {"native": True}, "pruning": {"enabled": pruning}}
    cwd, env = make_project(root, url, [], settings=settings)
    claude = {"id": "claude-n", **WINDOW, "compaction": anth or {"native": True}}
    providers = {
        "anth": {"baseUrl": url, "api": "anthropic-messages", "apiKey": "k", "models": [claude]},
        "resp": {
            "baseUrl": url + "/v1",
            "api": "openai-responses",
            "apiKey": "k",
            "models": [{"id": "gpt-n", **WINDOW}],
        },
        "chat": {
            "baseUrl": url + "/v1",
            "api": "openai-completions",
            "apiKey": "k",
            "models": [{"id": "chat-n", **WINDOW}],
        },
    }
    (Path(env["HERON_HOME"]) / "models.json").write_text(json.dumps({"providers": providers}))
    return cwd, env


def session_lines(env: dict[str, str]) -> list[dict[str, Any]]:
    files = sorted(Path(env["HERON_HOME"]).rglob("*.jsonl"))
    files = [f for f in files if "sessions" in f.parts]
    assert len(files) == 1, files
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def summarised(server: NativeServer) -> bool:
    """Whether heron sent a summary request of its own."""
    return any(is_summary_body(body) for body in server.bodies)


def turn_bodies(server: NativeServer) -> list[dict[str, Any]]:
    """The conversation's requests (not heron's summaries or the memory flush)."""
    out = []
    for raw, body in zip(server.raw, server.bodies, strict=True):
        if is_summary_body(body):
            continue
        out.append(raw)
    return out


def turn_bodies_of(server: NativeServer, start: int) -> list[dict[str, Any]]:
    rows = zip(server.raw[start:], server.bodies[start:], strict=True)
    return [raw for raw, body in rows if not is_summary_body(body)]


def same_requests(one: list[str], other: list[str]) -> bool:
    """The same requests in the same order, except heron's summary requests, which may
    arrive in either order (a split turn's history and prefix are summarised at once)."""

    def split(bodies: list[str]) -> tuple[list[str], list[str]]:
        summaries = sorted(b for b in bodies if is_summary_text(b))
        return [b for b in bodies if not is_summary_text(b)], summaries

    return split(one) == split(other)


def led_by_block(raw: dict[str, Any]) -> bool:
    if "input" in raw:
        return bool(raw["input"]) and raw["input"][0].get("type") == "compaction"
    first = raw["messages"][0]
    return first["role"] == "assistant" and first["content"][0].get("type") == "compaction"


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-responses"])
def test_native_compactions_restarts_and_switch(api: str, tmp_path: Path, servers: list[LocalServer]) -> None:
    model = MODELS[api]
    # one long-lived process
    # both project paths have the same length: the budget notices give token counts, and the
    # system prompt names the working directory
    one = NativeServer(PLAN, LIMITS)
    cwd, env = project(tmp_path / "one1", servers, one)
    rpc = Rpc(cwd, env, model)
    try:
        for n in range(TURNS):
            rpc.turn(one, n)
        one_turns = len(one.raw)
        rpc.set_model(MODELS["chat"])  # the same switches as the -p processes make below
        rpc.turn(one, TURNS)
        rpc.set_model(model)
        rpc.turn(one, TURNS + 1)
    finally:
        rpc.close()
    # a new process per turn
    each = NativeServer(PLAN, LIMITS)
    cwd2, env2 = project(tmp_path / "eac2", servers, each)
    for n in range(TURNS):
        run_print(cwd2, env2, each, n, model, first=n == 0)

    assert normalised(one.raw[:one_turns], tmp_path / "one1") == normalised(each.raw, tmp_path / "eac2")
    for server in (each,):  # ``one`` sent the same bytes
        assert server.rejected == 0, "a request went over the 16k window"
        assert server.native_rejections == 0
        assert server.compactions >= 3, f"only {server.compactions} native compactions"
        bodies = turn_bodies(server)
        assert all("context_management" in raw for raw in bodies)
        # after each native compaction the next request starts at its block
        assert sum(led_by_block(raw) for raw in bodies) >= server.compactions
        assert not summarised(server), "heron compacted itself although the provider did"

    lines = session_lines(env2)
    natives = [line for line in lines if (line.get("message") or {}).get("nativeCompaction")]
    assert len(natives) == each.compactions
    ledger = [line["data"] for line in lines if line.get("customType") == "heron.ledger"]
    assert sum(1 for r in ledger if r.get("kind") == "compaction" and r["detail"].get("reason") == "native") == len(
        natives
    )

    # the same session resumed on the chat wire: heron's own summary, never the opaque block
    before = len(each.raw)
    run_print(cwd2, env2, each, TURNS, MODELS["chat"], first=False)
    sent = each.raw[before:]
    wires = each.wires[before:]
    assert set(wires) == {"chat"}
    summaries = [raw for raw in sent if is_summary_body(raw)]
    assert summaries  # the history before the block (and the prefix of the turn it split)
    turns = [raw for raw in sent if raw not in summaries]
    text = json.dumps(turns)
    assert "Follow the plan." in text  # the summary heron's summariser wrote
    assert NATIVE_MARK not in text and "enc:" not in text and '"compaction"' not in text
    assert each.rejected == 0
    switch = [line for line in session_lines(env2) if line.get("type") == "compaction"]
    assert len(switch) == 1 and switch[0]["details"].get("heronChosenBy") == "heron:native-switch"
    kept = next(line for line in session_lines(env2) if line.get("id") == switch[0]["firstKeptEntryId"])
    assert kept["message"]["nativeCompaction"] == natives[-1]["message"]["nativeCompaction"]

    # and back on the first provider: its block leads the request again
    before = len(each.raw)
    run_print(cwd2, env2, each, TURNS + 1, model, first=False)
    back = turn_bodies_of(each, before)
    assert back and led_by_block(back[0]) and each.rejected == 0
    # one process switching with set_model sent the same bytes as the processes switching with --model
    # (heron's two summaries of a split turn go out concurrently: compared as a set)
    assert same_requests(normalised(one.raw, tmp_path / "one1"), normalised(each.raw, tmp_path / "eac2"))


def test_rejected_native_field_falls_back(tmp_path: Path, servers: list[LocalServer]) -> None:
    """A server without the beta: the first request is sent again without the field, the
    session records that native compaction is off, and heron compacts the session itself."""
    server = NativeServer(PLAN, LIMITS, reject_native=True)
    cwd, env = project(tmp_path, servers, server, pruning=False)
    for n in range(TURNS):
        run_print(cwd, env, server, n, MODELS["anthropic-messages"], first=n == 0)
    assert server.native_rejections == 1 and server.rejected == 0 and server.compactions == 0
    assert "context_management" in server.raw[0] and "context_management" not in server.raw[1]
    assert not any("context_management" in raw for raw in server.raw[1:])
    lines = session_lines(env)
    decisions = [line["data"] for line in lines if line.get("customType") == "heron.context"]
    assert any(d.get("op") == "native" and d.get("enabled") is False for d in decisions)
    ledger = [line["data"] for line in lines if line.get("customType") == "heron.ledger"]
    assert any(r["detail"].get("reason") == "native_rejected" for r in ledger if r.get("kind") == "compaction")
    assert summarised(server), "heron's own compaction never ran"


def test_malformed_native_blocks_leave_heron_compacting(tmp_path: Path, servers: list[LocalServer]) -> None:
    """Compaction items without their encrypted content: nothing is kept from them, no
    request is led by one, and heron's own compaction keeps the session in the window."""
    server = NativeServer(PLAN, LIMITS, malformed=True)
    cwd, env = project(tmp_path, servers, server, pruning=False)
    for n in range(TURNS):
        run_print(cwd, env, server, n, MODELS["openai-responses"], first=n == 0)
    assert server.compactions >= 1 and server.rejected == 0
    assert not any(led_by_block(raw) for raw in turn_bodies(server))
    assert not any((line.get("message") or {}).get("nativeCompaction") for line in session_lines(env))
    assert summarised(server)


def test_server_side_clearing_instead_of_pruning(tmp_path: Path, servers: list[LocalServer]) -> None:
    """``serverClearing`` on an Anthropic model: every turn asks for
    ``clear_tool_uses_20250919`` with its beta, heron stubs nothing itself, and each
    clearing the server reports is in the ledger like a pruning step."""
    server = NativeServer(PLAN, LIMITS)
    cwd, env = project(tmp_path, servers, server, anth={"native": False, "serverClearing": True})
    for n in range(TURNS):
        run_print(cwd, env, server, n, MODELS["anthropic-messages"], first=n == 0)
    assert server.rejected == 0 and server.native_rejections == 0 and server.compactions == 0
    assert server.clearings >= 1
    for raw in turn_bodies(server):
        edits = raw["context_management"]["edits"]
        assert [e["type"] for e in edits] == ["clear_tool_uses_20250919"]
        assert edits[0]["exclude_tools"] == ["todo"] and edits[0]["keep"] == {"type": "tool_uses", "value": 3}
    assert PRUNED not in json.dumps(server.raw)
    lines = session_lines(env)
    assert not any(line["data"].get("op") == "prune" for line in lines if line.get("customType") == "heron.context")
    ledger = [line["data"] for line in lines if line.get("customType") == "heron.ledger"]
    cleared = [
        r for r in ledger if r.get("kind") == "prune" and r["detail"].get("server") == "clear_tool_uses_20250919"
    ]
    assert len(cleared) == server.clearings
    assert all(r["detail"]["cleared_input_tokens"] > 0 for r in cleared)
