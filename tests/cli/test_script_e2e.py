"""The script tool through the real entry point: ``heron -p`` (a new process per turn,
``--continue``) against a local server speaking OpenAI Chat Completions that scripts the
model's calls; the assertions look at what the server received, the files, the session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from heron.ai.types import ToolResultMessage
from heron.cli.tui.export import render_entry
from heron.session.entries import Entry, MessageEntry
from heron.session.store import SessionStore
from tests.batch.support import (
    ScriptedServer,
    batch_args,
    batch_env,
    make_project,
    read_results,
    run_batch,
    write_tasks,
)
from tests.cli.test_control_e2e import rewind
from tests.cli.test_print_json_e2e import Project, openai_args, openai_tool_results, project
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_reply

__all__ = ["project"]  # the fixture, imported for the tests below

SURVEY = (
    "counts = {}\n"
    "for name in ('a.py', 'b.py', 'c.py'):\n"
    "    counts[name] = read(name).count('def ')\n"
    "print('surveyed', len(counts))\n"
    "counts\n"
)


def is_result(entry: Entry) -> bool:
    return isinstance(entry, MessageEntry) and isinstance(entry.message, ToolResultMessage)


def turn(project: Project, server: LocalServer, prompt: str, *calls: tuple[str, str, dict[str, object]]) -> None:
    server.queue(*(openai_reply("", [call]) for call in calls), openai_reply("done"))
    flags = ["-c"] if project.session_files() else []
    result = project.run(*openai_args(server), *flags, "-p", prompt)
    assert result.code == 0, result.err


def test_a_resumed_session_that_used_script_sends_the_same_bytes(project: Project, local_server: LocalServer) -> None:
    for n, name in enumerate(("a.py", "b.py", "c.py")):
        (project.cwd / name).write_text("".join(f"def f{i}():\n    return 'body-{i}'\n" for i in range(n + 1)))
    turn(project, local_server, "survey", ("s1", "script", {"code": SURVEY}))
    first = local_server.requests[-1].json()  # the request after the script's result, by the first process
    assert openai_tool_results(local_server.requests[-1])["s1"] == (
        'surveyed 3\n\nReturn value:\n{"a.py": 1, "b.py": 2, "c.py": 3}'
    )
    assert "body-0" not in json.dumps(first)  # the files' contents never reached the model
    turn(project, local_server, "again")
    resumed = local_server.requests[-1].json()  # a new process, rebuilt from the session file
    assert resumed["tools"] == first["tools"]
    prefix = resumed["messages"][: len(first["messages"])]
    assert json.dumps(prefix) == json.dumps(first["messages"])
    assert resumed["messages"][len(first["messages"]) :] == [
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "again"},
    ]
    # the inner calls are in the session, under the script's result
    results = [
        line["message"]
        for line in project.session_lines()
        if line["type"] == "message" and line["message"]["role"] == "toolResult"
    ]
    calls = results[0]["details"]["inner_calls"]
    assert [(c["id"], c["tool"], c["arguments"]) for c in calls] == [
        ("s1.1", "read", {"path": "a.py"}),
        ("s1.2", "read", {"path": "b.py"}),
        ("s1.3", "read", {"path": "c.py"}),
    ]
    assert "def f0" in calls[0]["text"]
    # /tree, the export and the recall index show them
    session_file = str(project.session_files()[0])
    tree = project.run("sessions", "tree", session_file)
    assert "toolResult script [3 inner calls: read]: surveyed 3" in tree.out, tree.out
    entry = next(e for e in SessionStore.open(Path(session_file), read_only=True).entries() if is_result(e))
    assert "inner tool calls" in render_entry(entry) and "body-2" in render_entry(entry)
    found = project.run("sessions", "search", "body", "--all", "--json")
    assert found.code == 0, found.err
    assert any(hit["tool"] == "script" for hit in json.loads(found.out)), found.out


def test_rewinding_restores_a_file_the_script_wrote(project: Project, local_server: LocalServer) -> None:
    turn(project, local_server, "turn 1", ("c1", "bash", {"command": "echo one > notes.txt"}))
    code = "write('notes.txt', 'two\\n')\nopen('made.txt', 'w').write('by open()')\n"
    turn(project, local_server, "turn 2", ("c2", "script", {"code": code}))
    assert (project.cwd / "notes.txt").read_text() == "two\n"
    assert (project.cwd / "made.txt").exists()
    done: subprocess.CompletedProcess[str] = rewind(project, "--to", "2", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "notes.txt").read_text() == "one\n"
    assert not (project.cwd / "made.txt").exists()


class ScriptingServer(ScriptedServer):
    """Each batch task's model: one script call, then an answer quoting the script's result."""

    def _respond(self, request: Recorded) -> Reply:
        messages = request.json().get("messages", [])
        if messages and messages[-1].get("role") == "tool":
            return openai_reply(f"done: {messages[-1]['content']}")
        code = "read('task.txt').upper().strip()"
        return openai_reply("", [("s1", "script", {"code": code})])


def test_batch_tasks_run_scripts(tmp_path: Path) -> None:
    server = ScriptingServer()
    try:
        project = make_project(tmp_path)
        write_tasks(tmp_path / "tasks.jsonl", project, 2)
        args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server)
        done = run_batch(args, batch_env(tmp_path), tmp_path)
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    results = read_results(tmp_path / "out")
    assert [r["answer"] for r in results] == ['done: Return value:\n"THE TASK FILE"'] * 2
    for result in results:
        entries = [json.loads(line) for line in Path(result["session"]).read_text().splitlines()]
        tool_result = next(e["message"] for e in entries if e.get("message", {}).get("role") == "toolResult")
        assert [c["tool"] for c in tool_result["details"]["inner_calls"]] == ["read"]
