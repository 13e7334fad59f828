"""``heron`` interactive mode, end to end: the real program in a pseudo-terminal (pexpect)
against a local OpenAI-compatible server on 127.0.0.1 that streams scripted SSE replies.

Patterns are matched against the raw terminal stream, which carries escape sequences
between differently styled words, so each pattern stays inside one styled run of text.
Timeouts are generous (a loaded CI machine); nothing here measures speed.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import heron
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.summaries import is_summary_body

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

TIMEOUT = 45
SRC = str(Path(heron.__file__).resolve().parents[1])
ANSI = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>])|[\x08]")
SUMMARY = "## Goal\nGreet the user twice.\n\n## Progress\nBoth greetings done."


# --- SSE replies ---------------------------------------------------------------------------


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-t",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
    }


def _usage(prompt: int, completion: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-t",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "test-model",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _body(chunks: list[dict[str, Any]]) -> str:
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"


def answer(*pieces: str, prompt_tokens: int = 1_500, completion_tokens: int = 42, **reply: Any) -> Reply:
    """A streamed text answer, one delta per piece, with a usage report."""
    chunks = [_chunk({"role": "assistant", "content": ""})] + [_chunk({"content": p}) for p in pieces]
    chunks += [_chunk(finish="stop"), _usage(prompt_tokens, completion_tokens)]
    return Reply(body=_body(chunks), **reply)


def bash_call(command: str, call_id: str = "call_1") -> Reply:
    arguments = json.dumps({"command": command})
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": arguments},
                    }
                ]
            }
        ),
        _chunk(finish="tool_calls"),
        _usage(1_500, 20),
    ]
    return Reply(body=_body(chunks))


def user_texts(request: Recorded) -> list[str]:
    out = []
    for message in request.json()["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def system_prompt(request: Recorded) -> str:
    first = request.json()["messages"][0]
    return str(first["content"]) if first["role"] in ("system", "developer") else ""


# --- the program ----------------------------------------------------------------------------


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    return home, project


def environment(home: Path, term: str = "xterm") -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(
        HERON_HOME=str(home),
        TERM=term,
        COLUMNS="100",
        LINES="40",
        PROMPT_TOOLKIT_NO_CPR="1",  # no terminal answers cursor-position requests here
        PYTHONPATH=SRC + os.pathsep + env.get("PYTHONPATH", ""),
        PYTHONUNBUFFERED="1",
    )
    env.pop("NO_COLOR", None)
    return env


@pytest.fixture
def spawn(local_server: LocalServer, dirs: tuple[Path, Path]) -> Iterator[Any]:
    children: list[Any] = []
    home, project = dirs

    def start(*args: str, term: str = "xterm") -> Any:
        argv = ["-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model", *args]
        child = pexpect.spawn(
            sys.executable,
            argv,
            cwd=str(project),
            env=environment(home, term),
            encoding="utf-8",
            timeout=TIMEOUT,
            dimensions=(40, 100),
        )
        child.logfile_read = io.StringIO()
        children.append(child)
        child.expect("Ctrl\\+D exits")
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        # shown by pytest only when the test failed: what the terminal received, minus escapes
        transcript = ANSI.sub("", child.logfile_read.getvalue()).replace("\r", "")
        print(f"--- terminal transcript (last 4000 characters) ---\n{transcript[-4000:]}")


def exit_with_ctrl_d(child: Any) -> None:
    child.send("\x04")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


def footer(child: Any) -> None:
    child.expect("test-model")
    child.expect(r"ctx \d+% of 128k")


# --- tests ------------------------------------------------------------------------------------


def test_prompt_streams_the_answer_then_the_footer_and_context(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, _ = dirs
    local_server.queue(answer("Hello from the ", "local server.\n\n", "Second paragraph ", "of the answer."))
    child = spawn()
    child.send("say hello\r")
    child.expect("Hello from the local server.")
    child.expect("Second paragraph of the answer.")
    footer(child)
    assert user_texts(local_server.requests[-1])[-1] == "say hello"

    child.send("/context\r")
    child.expect("128,000")  # the window
    child.expect("system prompt")
    child.expect("messages: assistant")
    child.expect("(?i)ledger")
    exit_with_ctrl_d(child)
    assert "say hello" in (home / "history").read_text()
    sessions = list((home / "sessions").glob("*/*.jsonl"))
    assert len(sessions) == 1 and "Second paragraph" in sessions[0].read_text()


def test_compact_sends_the_summary_request_and_records_it(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, _ = dirs
    (home / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1}}))
    local_server.fallback = answer(SUMMARY)  # every summary request (there may be two)
    # long enough that a summary shrinks the context (a compaction never makes it grow)
    long_answer = "First greeting, hello. " + "The weather is fine today. " * 200
    local_server.queue(answer(long_answer), answer("Second greeting, hello again."))
    child = spawn()
    child.send("greet me\r")
    child.expect("First greeting")
    footer(child)
    child.send("greet me again\r")
    child.expect("Second greeting")
    footer(child)
    child.send("/compact\r")
    child.expect("compacting the context")
    child.expect("compacted: ")
    footer(child)
    child.send("/context\r")
    child.expect(r"(?m)^\s+compaction\b")  # the ledger lists the compaction
    exit_with_ctrl_d(child)
    summary_requests = [r for r in local_server.requests if is_summary_body(r.json())]
    # history and turn prefix are summarised concurrently: either request may come last
    assert summary_requests and any("greet me" in " ".join(user_texts(r)) for r in summary_requests)
    (session_file,) = (home / "sessions").glob("*/*.jsonl")
    entries = [json.loads(line) for line in session_file.read_text().splitlines()]
    compactions = [e for e in entries if e.get("type") == "compaction"]
    assert len(compactions) == 1 and "Greet the user twice." in compactions[0]["summary"]


def test_ctrl_c_aborts_a_slow_run_and_the_prompt_comes_back(spawn: Any, local_server: LocalServer) -> None:
    slow = answer(*[f"Sentence {i} of a slow answer. " for i in range(300)], chunk_size=64, chunk_delay=0.05)
    local_server.queue(slow)
    child = spawn()
    child.send("write slowly\r")
    child.expect(r"Sentence 3\b")  # lines wrap at 100 columns: match within one
    child.send("\x03")
    child.expect("aborted")
    footer(child)
    local_server.queue(answer("Back again, quickly."))
    child.send("again\r")
    child.expect("Back again, quickly.")
    footer(child)
    # idle: Ctrl+C clears what was typed, so the next line is a clean command
    child.send("half-typed draft")
    child.expect("draft")
    child.send("\x03")
    child.send("/session\r")
    child.expect("file: ")
    child.expect("messages: ")
    exit_with_ctrl_d(child)
    assert all("half-typed" not in " ".join(user_texts(r)) for r in local_server.requests)


def test_task_from_the_command_line_multiline_input_and_shell_commands(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(answer("Task done."), answer("Two lines received."), answer("Saw the listing."))
    child = spawn("do the task")
    child.expect("Task done.")
    footer(child)
    assert user_texts(local_server.requests[0])[-1] == "do the task"
    child.send("line one")
    child.send("\n")  # Ctrl+J: a newline, not a submit
    child.send("line two\r")
    child.expect("Two lines received.")
    footer(child)  # the answer shows while it streams: wait for the run to end
    assert user_texts(local_server.requests[1])[-1] == "line one\nline two"
    child.send("!echo from-the-shell\r")
    child.expect("added to the context")
    child.send("!!echo private-output\r")
    child.expect("not added to the context")
    child.send("what did the shell say?\r")
    child.expect("Saw the listing.")
    sent = "\n".join(user_texts(local_server.requests[2]))
    assert "from-the-shell" in sent and "private-output" not in sent
    exit_with_ctrl_d(child)


def test_enter_while_running_steers(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(bash_call("sleep 2"), answer("Steered answer."))
    child = spawn()
    child.send("run the slow command\r")
    child.expect("bash")
    child.expect("sleep 2")
    child.send("also mention the weather\r")
    child.expect("steering queued")
    child.expect("Steered answer.")
    footer(child)
    exit_with_ctrl_d(child)
    assert "also mention the weather" in user_texts(local_server.requests[1])


def test_a_dumb_terminal_gets_plain_text(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(answer("Plain **bold** text."))
    child = spawn(term="dumb")
    child.send("hi\r")
    child.expect("Plain bold text.")
    child.expect(r"test-model · ↑1\.5k ↓42 · \$0\.000 · ctx \d+% of 128k")
    text = child.before + child.after
    assert "\x1b[1m" not in text  # no styling codes from rich
    exit_with_ctrl_d(child)


def test_without_a_terminal_each_line_runs_in_turn(local_server: LocalServer, dirs: tuple[Path, Path]) -> None:
    home, project = dirs
    local_server.queue(answer("Piped answer."))
    done = subprocess.run(
        [sys.executable, "-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model"],
        input="first piped line\n/session\n/quit\nnever sent\n",
        capture_output=True,
        text=True,
        cwd=project,
        env=environment(home, "dumb"),
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    assert "Piped answer." in done.stdout
    assert re.search(r"file: .*\.jsonl", done.stdout)
    assert len(local_server.requests) == 1
    assert user_texts(local_server.requests[0])[-1] == "first piped line"


# --- streaming, keys, hostile bytes ---------------------------------------------------------


def slow_answer(words: int, delay: float) -> Reply:
    """An answer with no sentence punctuation, one word per chunk, ``delay`` s apart."""
    chunks = [_chunk({"role": "assistant", "content": ""})]
    chunks += [_chunk({"content": f"word{n} "}) for n in range(words)]
    chunks += [_chunk(finish="stop"), _usage(1_500, 42)]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    # one SSE event per write: split the body at event boundaries
    return Reply(
        body=body, chunk_size=len(f"data: {json.dumps(_chunk({'content': 'word10 '}))}\n\n"), chunk_delay=delay
    )


def test_text_appears_as_it_arrives_without_punctuation(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(slow_answer(40, 0.25))  # ~10 s in all
    child = spawn()
    started = time.monotonic()
    child.send("talk slowly\r")
    child.expect("word2 ")  # in the live line, long before the answer ends
    first = time.monotonic() - started
    child.expect("word39")
    footer(child)
    assert first < 6, first
    exit_with_ctrl_d(child)


def test_esc_aborts_and_alt_enter_queues_a_follow_up(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(slow_answer(200, 0.1))
    child = spawn()
    child.send("go on for a while\r")
    child.expect("word1 ")
    child.send("\x1b")  # Esc alone
    child.expect("aborted")
    footer(child)
    local_server.queue(bash_call("sleep 2"), answer("After the command."), answer("Follow-up answered."))
    child.send("run the slow command\r")
    child.expect("sleep 2")
    child.send("then summarise")
    child.send("\x1b\r")  # Alt+Enter
    child.expect("follow-up queued")
    child.expect("Follow-up answered.")
    footer(child)
    exit_with_ctrl_d(child)
    last = user_texts(local_server.requests[-1])
    assert last[-1] == "then summarise" and "run the slow command" in last


def test_model_switches_keep_the_servers_own_name(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, _ = dirs
    (home / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "second": {
                        "baseUrl": f"{local_server.url}/v1",
                        "api": "openai-chat",
                        "models": [{"id": "second-model"}],
                    }
                }
            }
        )
    )
    local_server.queue(answer("From the other model."), answer("From the second model."))
    child = spawn()
    child.send("/model custom/other-model\r")
    child.expect("model: custom/other-model")
    child.send("hello\r")
    child.expect("From the other model.")
    child.expect(r"ctx \d+% of 128k")
    assert local_server.requests[-1].json()["model"] == "other-model"
    child.send("\x10")  # Ctrl+P: the next model
    child.expect("model: second/second-model")
    child.send("hello again\r")
    child.expect("From the second model.")
    child.expect(r"ctx \d+% of 128k")
    assert local_server.requests[-1].json()["model"] == "second-model"
    exit_with_ctrl_d(child)


HOSTILE = "\x1b[2J\x1b]0;pwned-title\x07\x1b]52;c;aGVsbG8=\x07"


def test_escape_sequences_from_the_model_and_files_never_reach_the_terminal(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    (project / "evil.txt").write_text(f"file says {HOSTILE} done\n")
    read_call = json.dumps({"path": f"evil.txt{HOSTILE}"})
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_r",
                        "type": "function",
                        "function": {"name": "read", "arguments": read_call},
                    }
                ]
            }
        ),
        _chunk(finish="tool_calls"),
        _usage(1_500, 20),
    ]
    local_server.queue(
        Reply(body=_body(chunks)),
        Reply(
            body=_body(
                [
                    _chunk({"role": "assistant", "content": ""}),
                    _chunk({"content": f"model says {HOSTILE} end"}),
                    _chunk(finish="stop"),
                    _usage(1_500, 20),
                ]
            )
        ),
    )
    (project / f"evil.txt{HOSTILE}").write_text(f"file says {HOSTILE} done\n")
    child = spawn()
    child.send("read it\r")
    child.expect("model says")
    footer(child)
    exit_with_ctrl_d(child)
    raw = child.logfile_read.getvalue()
    for sequence in ("\x1b]52;", "\x1b]0;pwned", "\x1b[2J"):
        assert sequence not in raw, sequence
    assert "^[]52;c;aGVsbG8=^G" in raw and "^[[2J" in raw
