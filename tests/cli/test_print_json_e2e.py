"""``heron -p`` and ``heron --mode json`` end to end: real subprocesses against a local
HTTP server speaking the OpenAI Chat Completions or the Anthropic Messages wire format.

Each scripted conversation makes the agent read a file, edit it, run a command and
answer, so one run goes through argument parsing, settings and model resolution, the
provider SDK, the tools, the session recorder and the mode's output. The assertions
look at everything a user (or a program driving heron) can see: the file system, the
session file, stdout/stderr and the exit code, the event stream, and what the server
received (system prompt, tools, tool results).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from heron.cli.modes.run_end import answer_of
from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.sse import anthropic_reply, openai_reply, openai_turn

TIMEOUT = 120  # seconds per heron process: generous, the machine running the tests may be busy
MODEL = "test-model"
ANSWER = "Done: greet.py now prints hello, heron."
GREET = 'print("hello, world")\n'
# A 1x1 PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)

# The conversation every provider gets: read, edit, run, answer.
READ = ("call_read", "read", {"path": "greet.py"})
EDIT = ("call_edit", "edit", {"path": "greet.py", "old_text": "hello, world", "new_text": "hello, heron"})
BASH = ("call_bash", "bash", {"command": "python3 greet.py && echo exit=$?"})


def heron_command() -> list[str]:
    """The installed ``heron`` script of this interpreter when there is one (what a user
    runs), else the module (same code, e.g. from a bare checkout)."""
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron.cli.main"]


@dataclass
class Result:
    code: int
    out: str
    err: str

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines()]


@dataclass
class Project:
    """A temp project (``cwd``), a private ``HERON_HOME``, and an environment without keys."""

    cwd: Path
    home: Path
    env: dict[str, str]

    def run(self, *args: str, stdin: str | None = None) -> Result:
        done = subprocess.run(
            [*heron_command(), *args],
            cwd=self.cwd,
            env=self.env,
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def session_files(self) -> list[Path]:
        return sorted((self.home / "sessions").glob("*/*.jsonl"))

    def session_lines(self) -> list[dict[str, Any]]:
        files = self.session_files()
        assert len(files) == 1, files
        return [json.loads(line) for line in files[0].read_text().splitlines()]

    def write_models(self, providers: dict[str, Any]) -> None:
        (self.home / "models.json").write_text(json.dumps({"providers": providers}))

    def write_settings(self, settings: dict[str, Any]) -> None:
        (self.home / "settings.json").write_text(json.dumps(settings))


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    cwd = tmp_path / "project"
    cwd.mkdir()
    (cwd / "greet.py").write_text(GREET)
    home = tmp_path / "heron-home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    yield Project(cwd=cwd, home=home, env=env)


def openai_args(server: LocalServer) -> list[str]:
    return ["--base-url", server.url + "/v1", "--model", MODEL]


def queue_task(server: LocalServer, reply: Any) -> None:
    server.queue(
        reply("I will read the file first.", [READ]),
        reply("", [EDIT]),
        reply("", [BASH]),
        reply(ANSWER),
    )


def anthropic_provider(server: LocalServer, **model: Any) -> dict[str, Any]:
    """A models.json provider: an Anthropic-format server on 127.0.0.1."""
    entry = {"id": "claude-local", "name": "Local Claude", "contextWindow": 200000, "maxTokens": 8192, **model}
    return {
        "local-claude": {
            "baseUrl": server.url,
            "api": "anthropic-messages",
            "apiKey": "sk-local-test",
            "models": [entry],
        }
    }


# --- what the server received -----------------------------------------------------------


def openai_tool_results(request: Recorded) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request.json()["messages"] if m["role"] == "tool"}


def anthropic_tool_results(request: Recorded) -> dict[str, str]:
    results: dict[str, str] = {}
    for message in request.json()["messages"]:
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        for block in message["content"]:
            if block["type"] == "tool_result":
                content = block["content"]
                text = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
                results[block["tool_use_id"]] = text
    return results


def api_key(request: Recorded) -> str | None:
    """The key an Anthropic request carried (SDK versions differ in the header they use)."""
    bearer = request.headers.get("authorization", "")
    return request.headers.get("x-api-key") or (bearer.removeprefix("Bearer ") if bearer else None)


def check_openai_requests(server: LocalServer, task: str) -> None:
    assert len(server.requests) == 4
    assert all(r.path == "/v1/chat/completions" and r.method == "POST" for r in server.requests)
    first = server.requests[0].json()
    assert first["model"] == MODEL and first["stream"] is True
    system = first["messages"][0]
    assert system["role"] in ("system", "developer") and "heron" in system["content"]
    assert first["messages"][1] == {"role": "user", "content": task}
    tools = {tool["function"]["name"] for tool in first["tools"]}
    assert tools == {"read", "bash", "edit", "write", "search_history", "todo", "task", "script"}
    # Each request carries the results of the calls before it, in order.
    assert openai_tool_results(server.requests[0]) == {}
    assert openai_tool_results(server.requests[1])["call_read"] == GREET.rstrip("\n")
    assert "call_edit" in openai_tool_results(server.requests[2])
    last = openai_tool_results(server.requests[3])
    assert last["call_bash"].strip() == "hello, heron\nexit=0"
    assistant_calls = [m for m in server.requests[3].json()["messages"] if m["role"] == "assistant"]
    assert [m["tool_calls"][0]["function"]["name"] for m in assistant_calls] == ["read", "edit", "bash"]


def check_anthropic_requests(server: LocalServer, task: str) -> None:
    assert len(server.requests) == 4
    assert all(r.path == "/v1/messages" for r in server.requests)
    assert api_key(server.requests[0]) == "sk-local-test"
    first = server.requests[0].json()
    assert first["model"] == "claude-local" and first["stream"] is True
    system = first["system"]
    system_text = system if isinstance(system, str) else "".join(block["text"] for block in system)
    assert "heron" in system_text
    user = first["messages"][0]
    assert user["role"] == "user"
    user_text = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
    assert user_text == task
    names = {tool["name"] for tool in first["tools"]}
    assert names == {"read", "bash", "edit", "write", "search_history", "todo", "task", "script"}
    assert all("input_schema" in tool for tool in first["tools"])
    assert anthropic_tool_results(server.requests[1])["call_read"] == GREET.rstrip("\n")
    assert "call_edit" in anthropic_tool_results(server.requests[2])
    assert anthropic_tool_results(server.requests[3])["call_bash"].strip() == "hello, heron\nexit=0"
    tool_uses = [
        block["name"]
        for message in server.requests[3].json()["messages"]
        if message["role"] == "assistant"
        for block in message["content"]
        if block["type"] == "tool_use"
    ]
    assert tool_uses == ["read", "edit", "bash"]


# --- what heron wrote ----------------------------------------------------------------------


def check_session_file(project: Project, task: str, provider: str, model: str) -> dict[str, Any]:
    lines = project.session_lines()
    header = lines[0]
    assert header["type"] == "session" and header["cwd"] == str(project.cwd)
    assert project.session_files()[0].name.endswith(f"_{header['id']}.jsonl")
    changes = [line for line in lines if line["type"] == "model_change"]
    assert changes and changes[0]["provider"] == provider and changes[0]["modelId"] == model
    messages = [line["message"] for line in lines if line["type"] == "message"]
    assert [m["role"] for m in messages] == ["user", *["assistant", "toolResult"] * 3, "assistant"]
    assert messages[0]["content"][0]["text"] == task
    results = {m["toolName"]: m for m in messages if m["role"] == "toolResult"}
    assert results["read"]["content"][0]["text"] == GREET.rstrip("\n")
    assert not any(m["isError"] for m in results.values())
    assert results["bash"]["content"][0]["text"].strip() == "hello, heron\nexit=0"
    assert messages[-1]["content"] == [{"type": "text", "text": ANSWER}]
    assert messages[-1]["stopReason"] == "stop"
    # Every entry hangs off the one before it: a single branch, leaf last.
    ids = [line["id"] for line in lines[1:]]
    assert [line["parentId"] for line in lines[1:]] == [None, *ids[:-1]]
    return header


def check_events(events: list[dict[str, Any]]) -> None:
    """The events of a run that answered: the agent's, then ``run_end`` naming the answer,
    which the last assistant ``message_end`` carries."""
    assert answer_of(events) == ANSWER
    outcome = events.pop()
    last = [e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"][-1]
    assert outcome == {
        "type": "run_end",
        "stop_reason": "stop",
        "error": None,
        "error_kind": None,
        "answer_chars": len(ANSWER),
        "answer_timestamp": last["timestamp"],
        "unsent": [],
        "goal": None,  # no goal loop ran
    }
    types = [event["type"] for event in events]
    assert types[0] == "agent_start" and types[-1] == "agent_end"
    assert types.count("agent_start") == 1 and types.count("agent_end") == 1
    assert types.count("turn_start") == 4 and types.count("turn_end") == 4
    assert "message_update" in types
    starts = [e for e in events if e["type"] == "tool_execution_start"]
    ends = [e for e in events if e["type"] == "tool_execution_end"]
    assert [(e["tool_name"], e["tool_call_id"]) for e in starts] == [(c[1], c[0]) for c in (READ, EDIT, BASH)]
    assert starts[1]["args"] == EDIT[2]
    assert [e["tool_name"] for e in ends] == ["read", "edit", "bash"] and not any(e["is_error"] for e in ends)
    assert ends[2]["result"]["content"][0]["text"].strip() == "hello, heron\nexit=0"
    finals = [e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    assert finals[-1]["content"] == [{"type": "text", "text": ANSWER}]
    # The streamed deltas of the last turn add up to the answer.
    last_turn = events[len(types) - 1 - types[::-1].index("turn_start") :]
    deltas = [
        e["event"]["delta"] for e in last_turn if e["type"] == "message_update" and e["event"]["type"] == "text_delta"
    ]
    assert "".join(deltas) == ANSWER
    end = events[-1]
    assert [m["role"] for m in end["messages"]][-1] == "assistant"


# --- the tests -------------------------------------------------------------------------------


def test_print_mode_openai_reads_edits_runs_and_answers(project: Project, local_server: LocalServer) -> None:
    queue_task(local_server, openai_reply)
    task = "Make greet.py greet heron, then run it."
    result = project.run(*openai_args(local_server), "-p", task)
    assert result.code == 0, result.err
    assert result.out == ANSWER + "\n"
    assert "Traceback" not in result.err
    assert (project.cwd / "greet.py").read_text() == 'print("hello, heron")\n'
    check_openai_requests(local_server, task)
    check_session_file(project, task, "custom", MODEL)


def test_json_mode_openai_header_then_one_event_per_line(project: Project, local_server: LocalServer) -> None:
    queue_task(local_server, openai_reply)
    task = "Make greet.py greet heron, then run it."
    result = project.run(*openai_args(local_server), "--mode", "json", "-p", task)
    assert result.code == 0, result.err
    lines = result.lines()  # every line is one JSON object
    header = lines[0]
    assert header["type"] == "session" and header["cwd"] == str(project.cwd)
    check_events(lines[1:])
    assert (project.cwd / "greet.py").read_text() == 'print("hello, heron")\n'
    check_openai_requests(local_server, task)
    assert check_session_file(project, task, "custom", MODEL)["id"] == header["id"]


def test_print_mode_anthropic_from_models_json(project: Project, local_server: LocalServer) -> None:
    project.write_models(anthropic_provider(local_server))
    queue_task(local_server, anthropic_reply)
    task = "Make greet.py greet heron, then run it."
    result = project.run("--model", "local-claude/claude-local", "-p", task)
    assert result.code == 0, result.err
    assert result.out == ANSWER + "\n"
    assert (project.cwd / "greet.py").read_text() == 'print("hello, heron")\n'
    check_anthropic_requests(local_server, task)
    check_session_file(project, task, "local-claude", "claude-local")


def test_json_mode_anthropic_model_chosen_from_models_json(project: Project, local_server: LocalServer) -> None:
    """No --model and no key: the model defined in models.json is the one used."""
    project.write_models(anthropic_provider(local_server))
    queue_task(local_server, anthropic_reply)
    task = "Make greet.py greet heron, then run it."
    result = project.run("--mode", "json", "-p", task)
    assert result.code == 0, result.err
    lines = result.lines()
    assert lines[0]["type"] == "session"
    check_events(lines[1:])
    updates = [e for e in lines if e["type"] == "message_update"]
    assert any(e["event"]["type"] == "toolcall_delta" for e in updates)
    assert (project.cwd / "greet.py").read_text() == 'print("hello, heron")\n'
    check_anthropic_requests(local_server, task)
    check_session_file(project, task, "local-claude", "claude-local")


def test_anthropic_catalogue_model_with_base_url(project: Project, local_server: LocalServer) -> None:
    """--base-url also points a built-in Anthropic model at another server."""
    local_server.queue(anthropic_reply("Hi from the local server."))
    result = project.run(
        "--model", "anthropic/claude-sonnet-4-5", "--base-url", local_server.url, "--api-key", "sk-cli", "-p", "say hi"
    )
    assert result.code == 0, result.err
    assert result.out == "Hi from the local server.\n"
    request = local_server.requests[0]
    assert request.path == "/v1/messages" and api_key(request) == "sk-cli"
    assert request.json()["model"] == "claude-sonnet-4-5"


def test_print_mode_reads_piped_stdin(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("It is a greeting script."), openai_reply("Still a greeting script."))
    result = project.run(*openai_args(local_server), "-p", stdin="What does this do?\nprint('hi')\n")
    assert result.code == 0, result.err
    assert result.out == "It is a greeting script.\n"
    user = local_server.requests[0].json()["messages"][1]
    assert user == {"role": "user", "content": "What does this do?\nprint('hi')"}
    # With a task as well, the piped text follows it.
    result = project.run(*openai_args(local_server), "-p", "Explain:", stdin="print('hi')\n")
    assert result.code == 0, result.err
    assert local_server.requests[1].json()["messages"][1]["content"] == "Explain:\n\nprint('hi')"


def test_at_file_arguments_attach_text_and_images(project: Project, local_server: LocalServer) -> None:
    (project.cwd / "notes.md").write_text("# Notes\nthe answer is 42\n")
    (project.cwd / "pixel.png").write_bytes(PNG)
    project.write_models(anthropic_provider(local_server, input=["text", "image"]))
    local_server.queue(anthropic_reply("A single pixel; the notes say 42."))
    result = project.run("-p", "What do these show?", "@notes.md", "@pixel.png")
    assert result.code == 0, result.err
    assert result.out == "A single pixel; the notes say 42.\n"
    content = local_server.requests[0].json()["messages"][0]["content"]
    text = "".join(block.get("text", "") for block in content)
    assert '<file path="notes.md">\n# Notes\nthe answer is 42\n' in text
    assert '<file path="pixel.png">' in text and "What do these show?" in text
    images = [block["source"] for block in content if block["type"] == "image"]
    assert images == [{"type": "base64", "media_type": "image/png", "data": base64.b64encode(PNG).decode()}]


def test_missing_at_file_is_a_usage_error(project: Project, local_server: LocalServer) -> None:
    result = project.run(*openai_args(local_server), "-p", "read this", "@nowhere.txt")
    assert result.code == 2
    assert "@nowhere.txt" in result.err and "no such file" in result.err
    assert local_server.requests == []


def test_auth_error_exits_1_with_the_error_on_stderr(project: Project, local_server: LocalServer) -> None:
    local_server.fallback = json_reply(401, {"error": {"message": "Incorrect API key provided", "type": "invalid"}})
    result = project.run(*openai_args(local_server), "--api-key", "sk-wrong", "-p", "hello")
    assert result.code == 1
    assert result.out == ""
    assert "Incorrect API key provided" in result.err and "Traceback" not in result.err
    assert len(local_server.requests) == 1  # not retried
    assert local_server.requests[0].headers["authorization"] == "Bearer sk-wrong"


def test_server_error_after_retries_exits_1(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"retry": {"maxRetries": 2, "baseDelayMs": 1, "maxDelayMs": 5}})
    local_server.fallback = json_reply(500, {"error": {"message": "the model crashed", "type": "server_error"}})
    result = project.run(*openai_args(local_server), "--mode", "json", "-p", "hello")
    assert result.code == 1
    assert "the model crashed" in result.err and "Traceback" not in result.err
    assert len(local_server.requests) == 3  # the first attempt and maxRetries retries, then given up
    lines = result.lines()
    assert lines[0]["type"] == "session" and lines[-2]["type"] == "agent_end"
    end = lines[-1]  # the outcome, as stderr says it
    assert end["type"] == "run_end" and end["stop_reason"] == "error" and end["error_kind"] == "transient"
    assert result.err.rstrip().endswith(f"heron: {end['error']}") and "the model crashed" in end["error"]


def test_retries_are_not_multiplied(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"retry": {"maxRetries": 2, "baseDelayMs": 1, "maxDelayMs": 5}})
    local_server.fallback = json_reply(500, {"error": {"message": "the model crashed", "type": "server_error"}})
    result = project.run(*openai_args(local_server), "--mode", "json", "-p", "hello")
    assert result.code == 1
    assert len(local_server.requests) == 3  # the first attempt and maxRetries retries
    assert [line["type"] for line in result.lines()].count("agent_start") == 1


def test_server_error_then_success_is_retried(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"retry": {"maxRetries": 3, "baseDelayMs": 1, "maxDelayMs": 5}})
    local_server.queue(json_reply(500, {"error": {"message": "overloaded"}}), openai_reply("Recovered."))
    result = project.run(*openai_args(local_server), "-p", "hello")
    assert result.code == 0, result.err
    assert result.out == "Recovered.\n"
    assert len(local_server.requests) == 2


def spawn(project: Project, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*heron_command(), *args],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_json_mode_stops_when_the_reader_goes_away(project: Project, local_server: LocalServer) -> None:
    """`heron --mode json ... | head -1`: the run is aborted, quietly, before any tool runs."""
    # The pipe is closed while heron starts, or waits for the model's first answer.
    local_server.queue(
        Reply(body=openai_turn("Reading.", [READ]), delay=1.0), openai_reply("", [EDIT]), openai_reply(ANSWER)
    )
    process = spawn(project, *openai_args(local_server), "--mode", "json", "-p", "Make greet.py greet heron.")
    assert process.stdout is not None and process.stderr is not None
    assert json.loads(process.stdout.readline())["type"] == "session"
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=TIMEOUT) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err
    assert len(local_server.requests) <= 1  # aborted before or during the first answer
    assert (project.cwd / "greet.py").read_text() == GREET


def test_print_mode_with_its_stdout_closed(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("An answer nobody reads."))
    process = spawn(project, *openai_args(local_server), "-p", "hello")
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()
    err = process.stderr.read()
    assert process.wait(timeout=TIMEOUT) == 1
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_no_session_writes_no_file(project: Project, local_server: LocalServer) -> None:
    queue_task(local_server, openai_reply)
    result = project.run(*openai_args(local_server), "--no-session", "-p", "Make greet.py greet heron.")
    assert result.code == 0, result.err
    assert result.out == ANSWER + "\n"
    assert (project.cwd / "greet.py").read_text() == 'print("hello, heron")\n'  # the tools still work
    assert project.session_files() == []
    assert not (project.home / "sessions").exists() or not any((project.home / "sessions").rglob("*.jsonl"))


def test_continue_sends_the_previous_run(project: Project, local_server: LocalServer) -> None:
    local_server.queue(openai_reply("The first answer."), openai_reply("The second answer."))
    first = project.run(*openai_args(local_server), "-p", "first question")
    assert first.code == 0, first.err
    second = project.run(*openai_args(local_server), "--continue", "-p", "second question")
    assert second.code == 0, second.err
    assert second.out == "The second answer.\n"
    messages = local_server.requests[1].json()["messages"][1:]
    assert messages == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "The first answer."},
        {"role": "user", "content": "second question"},
    ]
    # Both runs are in the one session file.
    roles = [line["message"]["role"] for line in project.session_lines() if line["type"] == "message"]
    assert roles == ["user", "assistant", "user", "assistant"]
    # Without --continue a new session starts.
    local_server.queue(openai_reply("A fresh start."))
    third = project.run(*openai_args(local_server), "-p", "third question")
    assert third.code == 0, third.err
    assert [m["role"] for m in local_server.requests[2].json()["messages"]] == ["system", "user"]
    assert len(project.session_files()) == 2


# --- the task, in process (no model needed) ----------------------------------------------------


def test_gather_task_attaches_the_value_of_p_and_keeps_piped_text_apart(tmp_path: Path) -> None:
    import io

    from heron.cli.main import build_parser
    from heron.cli.task_input import gather_task

    (tmp_path / "main.py").write_text("print(1)\n")
    (tmp_path / "pixel.png").write_bytes(PNG)
    args = build_parser().parse_args(["-p", "@main.py", "explain", "@pixel.png"])
    task = gather_task(args, tmp_path, io.StringIO("line one\nline two\n"))
    assert task.text == (
        '<file path="main.py">\nprint(1)\n\n</file>\n\n<file path="pixel.png">(image attached)</file>'
        "\n\nexplain\n\nline one\nline two"
    )
    assert [image.mime_type for image in task.images] == ["image/png"]
    # A -p value with spaces is the task even when it starts with "@".
    args = build_parser().parse_args(["-p", "@team please review"])
    assert gather_task(args, tmp_path, io.StringIO("")).text == "@team please review"
