"""More of the interactive mode through the real program in a pseudo-terminal: ``@`` file
completion and attachment, images, ``/settings``, ``/cost``, the recap of a resumed
session, Ctrl+C during a retry wait, and context warnings. Same set-up as
test_interactive.py (a local OpenAI-compatible server on 127.0.0.1)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from heron.cli.tui.attachments import FileIndex, fuzzy_score
from tests.cli import test_interactive as base
from tests.cli.test_interactive import ANSI, answer, bash_call, exit_with_ctrl_d, footer, user_texts
from tests.support.http_server import LocalServer, json_reply

# the pseudo-terminal fixtures of test_interactive.py
dirs = base.dirs
spawn = base.spawn

PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d4944415478da63f8cfc0f01f0005000201"
    "a5d4a0a80000000049454e44ae426082"
)
TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.",
        "type": "invalid_request_error",
        "code": "context_length_exceeded",
    }
}


def git_project(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / ".gitignore").write_text("build/\n")
    (project / "src").mkdir()
    (project / "src" / "greeting.py").write_text("def greet():\n    return 'hello from greeting.py'\n")
    (project / "build").mkdir()
    (project / "build" / "generated_rt.py").write_text("IGNORED = True\n")


def vision_models(home: Path, url: str) -> None:
    """A models.json provider on the local server whose model takes images and has prices."""
    (home / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "vision": {
                        "baseUrl": f"{url}/v1",
                        "api": "openai-chat",
                        "models": [
                            {
                                "id": "vis-model",
                                "input": ["text", "image"],
                                "contextWindow": 128000,
                                "cost": {"input": 3, "output": 15},
                            }
                        ],
                    }
                }
            }
        )
    )


def user_parts(request: Any) -> list[Any]:
    users = [m for m in request.json()["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


# --- @ files ------------------------------------------------------------------------------------


def test_the_file_index_is_fuzzy_and_respects_gitignore(dirs: tuple[Path, Path]) -> None:
    _, project = dirs
    git_project(project)
    index = FileIndex(project)
    assert "build/generated_rt.py" not in index.files() and "src/greeting.py" in index.files()
    assert index.candidates("grt")[0] == "src/greeting.py"
    assert "src/" in index.candidates("src")
    assert fuzzy_score("xyz", "src/greeting.py") is None
    # the file name beats a match spread over the directories
    assert fuzzy_score("greet", "src/greeting.py") > fuzzy_score("greet", "gr/e/e/t/x.py")  # type: ignore[operator]


def test_at_completes_a_project_file_and_attaches_it(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    git_project(project)
    local_server.queue(answer("It greets."))
    child = spawn()
    child.send("explain @grt")
    child.expect("src/greeting.py")  # the completion menu, as typed
    shown = ANSI.sub("", child.before + child.after)
    child.send("\t")  # pick it
    child.send(" please\r")
    child.expect("attached: src/greeting.py")
    child.expect("It greets.")
    footer(child)
    assert "generated_rt" not in shown  # .gitignored: never offered
    sent = user_texts(local_server.requests[-1])[-1]
    assert sent.startswith('<file path="src/greeting.py">\ndef greet():')
    assert sent.endswith("explain @src/greeting.py please")
    exit_with_ctrl_d(child)


def test_a_missing_file_or_a_directory_is_said_and_the_prompt_goes_as_typed(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    (project / "docs").mkdir()
    local_server.queue(answer("Fine."))
    child = spawn()
    child.send("look at @nothere.py and @docs\r")
    child.expect("@nothere.py: no such file, sent as text")
    child.expect("@docs is a directory: not attached")
    child.expect("Fine.")
    assert user_texts(local_server.requests[-1])[-1] == "look at @nothere.py and @docs"
    exit_with_ctrl_d(child)


# --- images -----------------------------------------------------------------------------------------


def test_an_image_path_is_attached_when_the_model_takes_images(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, project = dirs
    vision_models(home, local_server.url)
    (project / "shot.png").write_bytes(PNG)
    pasted = project / "my shot.png"
    pasted.write_bytes(PNG)
    local_server.queue(answer("A single pixel."), answer("Two pixels."))
    child = spawn("--model", "vision/vis-model")
    child.send("what is in @shot.png\r")
    child.expect("A single pixel.")
    child.expect(r"ctx \d+% of 128k")  # the answer shows while it streams: wait for the run's footer
    parts = user_parts(local_server.requests[-1])
    images = [p for p in parts if p["type"] == "image_url"]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    # a path dropped into the terminal: quoted, with a space
    child.send(f"and this one? '{pasted}'\r")
    child.expect("Two pixels.")
    assert sum(p["type"] == "image_url" for p in user_parts(local_server.requests[-1])) == 1
    exit_with_ctrl_d(child)


def test_an_image_for_a_text_only_model_is_not_attached_and_says_so(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    (project / "shot.png").write_bytes(PNG)
    local_server.queue(answer("No image here."))
    child = spawn()
    child.send(f"describe {project / 'shot.png'}\r")
    child.expect("does not accept images, so it was not attached")
    child.expect("No image here.")
    assert all(p["type"] == "text" for p in user_parts(local_server.requests[-1]))
    exit_with_ctrl_d(child)


# --- /settings, /cost -------------------------------------------------------------------------------


def test_settings_shows_changes_and_validates(spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]) -> None:
    home, _ = dirs
    vision_models(home, local_server.url)
    (home / "settings.json").write_text(json.dumps({"shellPath": "/bin/sh"}))
    child = spawn()
    child.send("/settings\r")
    child.expect(r"compaction\s+on")
    child.expect(r"resume-turns\s+10")
    child.send("/settings compaction off\r")
    child.expect("compaction = off")
    child.send("/settings retries lots\r")
    child.expect("must be an integer >= 0")
    child.send("/settings model vision/vis-model\r")
    child.expect("model = vision/vis-model")
    child.send("/settings model nosuch/model\r")
    child.expect("/settings: ")
    child.send("/settings thinking high\r")
    child.expect("thinking = high")
    child.send("/settings resume-turns 3\r")
    child.expect("resume-turns = 3")
    child.send("/settings\r")
    child.expect(r"compaction\s+off\s+.*\[compaction\.enabled, user\]")
    exit_with_ctrl_d(child)
    saved = json.loads((home / "settings.json").read_text())
    assert saved == {
        "shellPath": "/bin/sh",
        "compaction": {"enabled": False},
        "defaultProvider": "vision",
        "defaultModel": "vis-model",
        "defaultThinkingLevel": "high",
        "resume": {"turns": 3},
    }
    assert (home / "settings.json").stat().st_mode & 0o777 in (0o600, 0o644)


def test_cost_sums_the_answers_by_model(spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]) -> None:
    home, _ = dirs
    vision_models(home, local_server.url)
    local_server.queue(
        answer("One.", prompt_tokens=1_000, completion_tokens=100),
        answer("Two.", prompt_tokens=2_000, completion_tokens=200),
        answer("Three.", prompt_tokens=10_000, completion_tokens=1_000),
    )
    child = spawn()
    child.send("first\r")
    child.expect("One.")
    footer(child)
    child.send("/model vision/vis-model\r")
    child.expect("model: vision/vis-model")
    child.send("second\r")
    child.expect("Two.")
    child.expect(r"ctx \d+% of 128k")  # the answer shows while it streams: wait for the run's footer
    child.send("third\r")
    child.expect("Three.")
    child.expect(r"ctx \d+% of 128k")
    child.send("/cost\r")
    child.expect(r"custom/test-model\s+1\s+1,000\s+100\s+0\s+0\s+\$0\.0000")
    # 12,000 in at $3/M + 1,200 out at $15/M = $0.036 + $0.018
    child.expect(r"vision/vis-model\s+2\s+12,000\s+1,200\s+0\s+0\s+\$0\.0540")
    child.expect(r"total\s+3\s+13,000\s+1,300")
    exit_with_ctrl_d(child)


# --- resuming ---------------------------------------------------------------------------------------


def test_resuming_shows_the_last_turns_with_tool_output_folded(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, _ = dirs
    local_server.queue(
        answer("Answer to the first."),
        bash_call("printf 'line-a\\nline-b\\nline-c'"),
        answer("The command printed three lines."),
        answer("Third answer."),
    )
    child = spawn()
    for prompt, expected in (
        ("first question", "Answer to the first."),
        ("run the command", "The command printed three lines."),
        ("third question", "Third answer."),
    ):
        child.send(prompt + "\r")
        child.expect(expected)
        footer(child)
    exit_with_ctrl_d(child)

    (home / "settings.json").write_text(json.dumps({"resume": {"turns": 2}}))
    child = spawn("--continue")
    transcript = ANSI.sub("", child.before + child.after).replace("\r", "")
    exit_with_ctrl_d(child)
    assert "earlier in this session (3 turns)" in transcript, transcript
    assert "1 earlier turn not shown" in transcript
    assert "first question" not in transcript and "run the command" in transcript
    # the call on one line, with the first line of its output and a count of the rest
    assert re.search(r"bash printf .*line-a \(\+2 lines\)", transcript), transcript
    assert "│ line-b" not in transcript  # the output itself is folded away
    assert (
        transcript.index("The command printed three lines.")
        < transcript.index("third question")
        < transcript.index("Third answer.")
    )


# --- retries, warnings --------------------------------------------------------------------------------


def test_ctrl_c_during_a_retry_wait_says_the_retry_was_cancelled(spawn: Any, local_server: LocalServer) -> None:
    busy = {"error": {"message": "The server is overloaded", "type": "server_error"}}
    local_server.queue(json_reply(503, busy, headers={"retry-after": "30"}))
    child = spawn()
    child.send("hello\r")
    child.expect(r"retrying in 30 s \(1/3\)")
    child.send("\x03")
    child.expect("retry 1 cancelled")
    footer(child)
    local_server.queue(answer("Back."))
    child.send("again\r")
    child.expect("Back.")
    footer(child)
    transcript = ANSI.sub("", child.logfile_read.getvalue())
    assert "succeeded" not in transcript
    assert len(local_server.requests) == 2  # no retry was sent after the cancel
    exit_with_ctrl_d(child)


def test_a_context_warning_is_one_line_in_the_conversation(spawn: Any, local_server: LocalServer) -> None:
    local_server.queue(json_reply(400, TOO_LONG), answer("Short answer."))
    child = spawn()
    child.send("hello\r")
    child.expect("context: the server rejected a request as too long; planning for a")
    child.expect("Short answer.")
    exit_with_ctrl_d(child)


@pytest.fixture(autouse=True)
def _no_git_identity_needed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def test_agents_lists_the_definitions_and_the_skipped_files(spawn: Any, dirs: tuple[Path, Path]) -> None:
    _, project = dirs
    agents = project / ".heron" / "agents"
    agents.mkdir(parents=True)
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews a diff for bugs\ntools: read, grep\n---\nYou review code.\n"
    )
    (agents / "broken.md").write_text("no front matter here\n")
    child = spawn()
    child.send("/agents\r")
    child.expect("reviewer: Reviews a diff for bugs")
    child.expect("broken.md")
    exit_with_ctrl_d(child)


def test_mcp_lists_the_servers_and_their_tools(spawn: Any, dirs: tuple[Path, Path]) -> None:
    import sys

    home, _ = dirs
    double = str(Path(__file__).parents[1] / "coding" / "mcp_double.py")
    (home / "mcp.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "dbl": {"command": sys.executable, "args": [double, "stdio"]},
                    "gone": {"command": str(home / "no-such-server")},
                }
            }
        )
    )
    child = spawn()
    child.send("/mcp\r")
    child.expect(r"dbl \(user, stdio\): (ready|connected|running)")
    child.expect("mcp__dbl__echo")
    child.expect(r"gone \(user, stdio\): ")
    exit_with_ctrl_d(child)
