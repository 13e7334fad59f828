"""Handoff through the real ``heron`` command: a parent session with a goal, a task list and
tool calls; ``handoff`` over rpc (one process) and ``-p --continue --handoff`` (a process
per turn) must create a linked child whose first request carries the frontier and not the
old transcript, send the same requests in both, and let ``search_history`` in the child
find what only the parent holds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.test_print_json_e2e import TIMEOUT, Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

GOAL = "Make greet.py greet in French and keep its test green."
FOCUS = "Now write the French greeting into greet.py."
TODOS = [
    {"content": "read the notes", "status": "completed"},
    {"content": "translate the greeting", "status": "in_progress"},
]
MARKER = "zanzibarquokka"  # only in notes.txt, far past the first line: never in the frontier
NOTES = "Notes for the greeting.\n" + "filler line about nothing\n" * 40 + f"The codeword is {MARKER}.\n"
OLD_TEXT = "Reading the notes first."
EDIT = {"path": "greet.py", "old_text": "hello, world", "new_text": "bonjour"}


def _parent(project: Project, server: LocalServer) -> Path:
    """``heron -p --goal``: a todo call, a read, an edit, an answer."""
    (project.cwd / "notes.txt").write_text(NOTES)
    # no goal loop in the parent or the child (which inherits the goal): one answer a prompt
    (project.cwd / ".heron").mkdir(exist_ok=True)
    (project.cwd / ".heron" / "settings.json").write_text(json.dumps({"goal": {"maxTurns": 0}}))
    server.queue(
        openai_reply(OLD_TEXT, [("c1", "todo", {"todos": TODOS}), ("c2", "read", {"path": "notes.txt"})]),
        openai_reply("", [("c3", "edit", EDIT)]),
        openai_reply("The parent step is done."),
    )
    done = project.run("-p", "--goal", GOAL, *openai_args(server), "start")
    assert done.code == 0, done.err
    [path] = project.session_files()
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _rpc(project: Project, server: LocalServer, commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each command's response (a prompt's: its run_end), from one ``--mode rpc --continue``."""
    child = subprocess.Popen(
        [*heron_command(), "--mode", "rpc", "--continue", *openai_args(server)],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    out: list[dict[str, Any]] = []
    try:
        for n, command in enumerate(commands):
            child.stdin.write(json.dumps({"id": n, **command}) + "\n")
            child.stdin.flush()
            wanted = "run_end" if command["type"] == "prompt" else "response"
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == wanted and event.get("id") == n:
                    out.append(event)
                    break
    finally:
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
    return out


def _check_first_child_request(body: dict[str, Any]) -> None:
    text = json.dumps(body["messages"])
    assert json.dumps(body).count(GOAL) == 1, "the goal once: at the head, not again in the frontier"
    assert GOAL in json.dumps(body["messages"][1])  # the goal leads the conversation (after the system prompt)
    for item in TODOS:
        assert f"[{item['status']}] {item['content']}" in text
    assert "<modified-files>\\ngreet.py\\n</modified-files>" in text
    assert "<read-files>\\nnotes.txt\\n</read-files>" in text
    assert OLD_TEXT not in text and MARKER not in text  # not the transcript
    assert body["messages"][-1] == {"role": "user", "content": FOCUS}
    assert not any(m["role"] in ("assistant", "tool") for m in body["messages"])


def _check_files(project: Project, parent: Path) -> Path:
    [child] = [p for p in project.session_files() if p != parent]
    header = _lines(child)[0]
    assert header["parentSession"] == str(parent)
    records = [e for e in _lines(parent) if e.get("customType") == "heron.handoff"]
    assert [r["data"]["child"] for r in records] == [str(child)]
    assert records[0]["data"]["focus"] == FOCUS
    return child


def test_rpc_handoff_and_print_handoff_send_the_same_requests(
    project: Project, local_server: LocalServer, tmp_path: Path
) -> None:
    parent = _parent(project, local_server)
    twin_home = tmp_path / "twin-home"
    (twin_home / "sessions").mkdir(parents=True)
    twin_sessions = twin_home / "sessions" / parent.parent.name
    twin_sessions.mkdir()
    (twin_sessions / parent.name).write_bytes(parent.read_bytes())
    twin = Project(cwd=project.cwd, home=twin_home, env={**project.env, "HERON_HOME": str(twin_home)})
    before = len(local_server.requests)

    # One process: rpc handoff, then the draft and a second prompt.
    local_server.queue(openai_reply("Writing it."), openai_reply("Done."))
    handed, first, second = _rpc(
        project,
        local_server,
        [
            {"type": "handoff", "focus": FOCUS},
            {"type": "prompt", "message": FOCUS},
            {"type": "prompt", "message": "go"},
        ],
    )
    assert handed["success"] is True, handed
    data = handed["data"]
    assert data["draft"] == FOCUS and data["parentSession"] == str(parent)
    child = _check_files(project, parent)
    assert data["sessionFile"] == str(child)
    assert first.get("error") is None and second.get("error") is None
    one = [r.json() for r in local_server.requests[before:]]

    # A process per turn: -p --continue --handoff, then -p --continue.
    local_server.queue(openai_reply("Writing it."), openai_reply("Done."))
    done = twin.run("-p", "--continue", "--handoff", *openai_args(local_server), FOCUS)
    assert done.code == 0, done.err
    assert done.out.strip() == "Writing it."
    again = twin.run("-p", "--continue", *openai_args(local_server), "go")
    assert again.code == 0, again.err
    per_turn = [r.json() for r in local_server.requests[before + 2 :]]
    twin_parent = twin_sessions / parent.name
    _check_files(twin, twin_parent)

    assert len(one) == len(per_turn) == 2
    _check_first_child_request(one[0])
    # The same bytes, one process or a process per turn (the twin's home, named in the
    # system prompt's memory directory, is the one difference the test itself makes).
    assert json.dumps(one) == json.dumps(per_turn).replace(str(twin_home), str(project.home))
    assert one[1]["messages"][: len(one[0]["messages"])] == one[0]["messages"]  # the prefix holds


def test_search_history_in_the_child_reaches_the_parent(project: Project, local_server: LocalServer) -> None:
    parent = _parent(project, local_server)
    local_server.queue(
        openai_reply("", [("s1", "search_history", {"query": MARKER})]),
        openai_reply("Found it."),
    )
    done = project.run("-p", "--continue", "--handoff", *openai_args(local_server), FOCUS)
    assert done.code == 0, done.err
    _check_first_child_request(local_server.requests[-2].json())
    results = [m for m in local_server.requests[-1].json()["messages"] if m["role"] == "tool"]
    assert len(results) == 1
    assert "1 match(es)" in results[0]["content"] and MARKER in results[0]["content"]
    child = _check_files(project, parent)
    assert MARKER not in child.read_text().split('"s1"')[0]  # only the search brought it in
    _check_link_shown(project, parent, child)


def _check_link_shown(project: Project, parent: Path, child: Path) -> None:
    """``heron sessions``, ``heron sessions tree`` (as ``/tree`` draws it) and the report
    name the other end of the handoff."""
    listing = project.run("sessions", "list")
    assert listing.code == 0, listing.err
    assert f"{child}\n    from {parent}" in listing.out
    assert f"from {child}" not in listing.out
    parent_tree = project.run("sessions", "tree", str(parent))
    assert f"custom heron.handoff (handed off to {child})" in parent_tree.out
    child_tree = project.run("sessions", "tree", str(child))
    assert f"custom_message heron.handoff (handed off from {parent})" in child_tree.out
    page = project.cwd / "parent.html"
    assert project.run("sessions", "report", str(parent), "-o", str(page)).code == 0
    assert "</a> handoff, started" in page.read_text()
    page = project.cwd / "child.html"
    assert project.run("sessions", "report", str(child), "-o", str(page)).code == 0
    assert "<p id='parent'>handoff: <a" in page.read_text()


def test_handoff_bad_input(project: Project, local_server: LocalServer) -> None:
    no_session = project.run("-p", "--handoff", *openai_args(local_server), FOCUS)
    assert no_session.code == 2 and "--handoff needs the session to hand off" in no_session.err
    rpc = project.run("--mode", "rpc", "--continue", "--handoff", *openai_args(local_server))
    assert rpc.code == 2 and "use /handoff or the rpc handoff command" in rpc.err
    in_memory, bad_focus = _rpc_no_session(project, local_server)
    assert in_memory["success"] is False and "not recorded" in in_memory["error"]
    assert bad_focus["success"] is False and '"focus" must be a string' in bad_focus["error"]
    assert project.session_files() == [] and local_server.requests == []


def _rpc_no_session(project: Project, server: LocalServer) -> list[dict[str, Any]]:
    done = subprocess.run(
        [*heron_command(), "--mode", "rpc", "--no-session", *openai_args(server)],
        cwd=project.cwd,
        env=project.env,
        input=json.dumps({"id": 1, "type": "handoff"})
        + "\n"
        + json.dumps({"id": 2, "type": "handoff", "focus": 5})
        + "\n",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    return [next(e for e in events if e.get("type") == "response" and e.get("id") == n) for n in (1, 2)]
