"""Permissions and checkpoints in the interactive mode, through the real program in a
pseudo-terminal against a local OpenAI-compatible server on 127.0.0.1 (the set-up of
test_interactive.py): the "ask" prompt (allow once, allow always, deny with a reason),
``/mode`` and Shift+Tab, the trust question at start, and ``/rewind``.

Every step waits for what the terminal shows before typing the next answer, with the
generous timeouts of test_interactive.py; nothing here depends on timing.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli import test_interactive as base
from tests.cli.test_interactive import (
    ANSI,
    TIMEOUT,
    _body,
    _chunk,
    _usage,
    answer,
    bash_call,
    environment,
    exit_with_ctrl_d,
    footer,
    user_texts,
)
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.terminal_wait import wait_until_reading

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

dirs = base.dirs
spawn = base.spawn
SHIFT_TAB = "\x1b[Z"


def tool_call(name: str, arguments: dict[str, Any], call_id: str = "call_1") -> Reply:
    chunks = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(arguments)},
                    }
                ]
            }
        ),
        _chunk(finish="tool_calls"),
        _usage(1_500, 20),
    ]
    return Reply(body=_body(chunks))


def tool_results(request: Recorded) -> list[str]:
    out = []
    for message in request.json()["messages"]:
        if message["role"] == "tool":
            content = message["content"]
            out.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return out


def ask_rule(home: Path, rule: str) -> None:
    """An ask rule in the user's settings (needs no trust)."""
    (home / "settings.json").write_text(json.dumps({"permissions": {"ask": [rule]}}))


# --- the ask prompt -------------------------------------------------------------------------


def test_an_ask_answered_allow_once_runs_the_call_and_asks_again_next_time(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, project = dirs
    ask_rule(home, "Bash(echo:*)")
    local_server.queue(
        bash_call("echo ran-once"), answer("First done."), bash_call("echo ran-twice", "call_2"), answer("Second done.")
    )
    child = spawn()
    child.send("run the echo\r")
    child.expect("permission needed")
    child.expect("echo ran-once")
    child.expect('ask rule "Bash\\(echo:\\*\\)"')
    child.expect("y allow once")
    child.send("1\r")
    child.expect("First done.")
    footer(child)
    assert "ran-once" in tool_results(local_server.requests[1])[-1]
    child.send("again\r")
    child.expect("permission needed")  # allowed once: the next call asks again
    child.expect("y allow once")
    child.send("y\r")
    child.expect("Second done.")
    footer(child)
    exit_with_ctrl_d(child)
    assert "ran-twice" in tool_results(local_server.requests[3])[-1]
    assert not (project / ".heron" / "settings.local.json").exists()
    typed = [line for line in (home / "history").read_text().splitlines() if line.startswith("+")]
    assert typed == ["+run the echo", "+again"]  # the answers are not in the history


def test_allow_always_writes_the_rule_and_the_second_call_is_not_asked(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    _, project = dirs
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "out.txt"
    local_server.queue(
        tool_call("write", {"path": str(target), "content": "first\n"}),
        answer("Wrote it."),
        tool_call("write", {"path": str(target), "content": "second\n"}, "call_2"),
        answer("Wrote it again."),
    )
    child = spawn()
    child.send("write outside\r")
    child.expect("permission needed")
    child.expect("outside the project")
    child.expect("y allow once   a allow always \\(adds ")
    child.send("2\r")
    child.expect("Wrote it.")
    footer(child)
    assert target.read_text() == "first\n"
    rules = json.loads((project / ".heron" / "settings.local.json").read_text())["permissions"]["allow"]
    assert len(rules) == 1 and str(outside) in rules[0]
    child.send("write there again\r")
    child.expect("Wrote it again.")
    footer(child)
    exit_with_ctrl_d(child)
    assert target.read_text() == "second\n"
    transcript = ANSI.sub("", child.logfile_read.getvalue())
    assert transcript.count("permission needed") == 1


def test_deny_with_a_reason_reaches_the_model_and_ctrl_c_denies(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, project = dirs
    ask_rule(home, "Bash(touch:*)")
    local_server.queue(
        bash_call("touch made.txt"),
        answer("Understood."),
        bash_call("touch other.txt", "call_2"),
        answer("Declined again."),
    )
    child = spawn()
    child.send("make the file\r")
    child.expect("y allow once")
    child.send("3\r")
    child.expect("the model is told your reason")
    child.send("use the Makefile target instead\r")
    child.expect("Understood.")
    footer(child)
    result = tool_results(local_server.requests[1])[-1]
    assert "The user denied this call" in result and "use the Makefile target instead" in result
    assert not (project / "made.txt").exists()
    child.send("try another\r")
    child.expect("y allow once")
    child.send("\x03")  # Ctrl+C at the question: deny, the run goes on
    child.expect("Declined again.")
    footer(child)
    exit_with_ctrl_d(child)
    assert "declined" in tool_results(local_server.requests[3])[-1]
    assert not (project / "other.txt").exists()


# --- modes ----------------------------------------------------------------------------------


def test_mode_plan_denies_an_edit_and_a_bad_mode_is_an_error(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    local_server.queue(tool_call("write", {"path": "plan.txt", "content": "no\n"}), answer("Stayed read-only."))
    child = spawn()
    child.send("/mode\r")  # in a terminal: the picker (test_interactive_pickers.py); Esc closes it
    child.expect("permission mode \\(now default\\)")
    child.expect("accept-edits")
    child.send("\x1b")
    child.send("/mode sideways\r")
    child.expect("unknown permission mode 'sideways'")
    child.send("/mode plan\r")
    child.expect("mode: plan")
    child.send("write the file\r")
    child.expect("Stayed read-only.")
    footer(child)
    child.expect("mode plan")  # the footer names a mode other than default
    exit_with_ctrl_d(child)
    assert "plan mode is read-only" in tool_results(local_server.requests[1])[-1]
    assert not (project / "plan.txt").exists()


def test_shift_tab_cycles_the_modes(spawn: Any, local_server: LocalServer) -> None:
    child = spawn()
    child.send(SHIFT_TAB)
    child.expect("mode: accept-edits")
    child.send(SHIFT_TAB)
    child.expect("mode: plan")
    child.send(SHIFT_TAB)
    child.expect("mode: default")
    child.send("/mode\r")
    child.expect(r"default \(current\)")  # the picker opens on the current mode
    child.send("\x1b")
    exit_with_ctrl_d(child)


# --- trust ----------------------------------------------------------------------------------


@pytest.fixture
def start_raw(local_server: LocalServer, dirs: tuple[Path, Path]) -> Iterator[Any]:
    """Like ``spawn`` but returns before the banner (the trust question comes first)."""
    home, project = dirs
    children: list[Any] = []

    def start(*args: str) -> Any:
        argv = ["-m", "heron.cli.main", "--base-url", f"{local_server.url}/v1", "--model", "test-model", *args]
        child = pexpect.spawn(
            sys.executable,
            argv,
            cwd=str(project),
            env=environment(home),
            encoding="utf-8",
            timeout=TIMEOUT,
            dimensions=(40, 100),
        )
        child.logfile_read = io.StringIO()
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        transcript = ANSI.sub("", child.logfile_read.getvalue()).replace("\r", "")
        print(f"--- terminal transcript (last 4000 characters) ---\n{transcript[-4000:]}")


def hooked_project(project: Path) -> None:
    """A project whose settings have a hook that leaves a file behind when it runs."""
    (project / ".heron").mkdir()
    hook = {"hooks": [{"type": "command", "command": "touch hook-ran"}]}
    (project / ".heron" / "settings.json").write_text(json.dumps({"hooks": {"UserPromptSubmit": [hook]}}))


def test_trust_yes_is_remembered_and_the_project_hooks_run(
    start_raw: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, project = dirs
    hooked_project(project)
    local_server.queue(answer("Hooked."))
    child = start_raw()
    child.expect("hooks in .heron/settings.json")
    child.expect("Trust this project\\? \\[y/N\\]")
    child.send("y\r")
    child.expect("trusted: remembered")
    child.expect("Ctrl\\+D exits")
    child.send("hello\r")
    child.expect("Hooked.")
    footer(child)
    exit_with_ctrl_d(child)
    assert (project / "hook-ran").exists()
    assert str(project.resolve()) in json.loads((home / "trusted-projects.json").read_text())["projects"]
    again = start_raw()
    again.expect("Ctrl\\+D exits")  # remembered: no question this time
    assert "Trust this project" not in again.before
    exit_with_ctrl_d(again)


def test_trust_no_keeps_hooks_off_and_is_asked_again(
    start_raw: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    home, project = dirs
    hooked_project(project)
    local_server.queue(answer("Unhooked."))
    child = start_raw()
    child.expect("Trust this project\\? \\[y/N\\]")
    child.send("n\r")
    child.expect("not trusted")
    child.expect("Ctrl\\+D exits")
    child.send("hello\r")
    child.expect("Unhooked.")
    footer(child)
    exit_with_ctrl_d(child)
    assert not (project / "hook-ran").exists()
    assert not (home / "trusted-projects.json").exists()
    again = start_raw()
    again.expect("Trust this project\\? \\[y/N\\]")  # a no is not remembered
    wait_until_reading(again.pid)  # a Ctrl+C before the read would wait for Enter (tests/support/terminal_wait.py)
    again.send("\x03")  # Ctrl+C: no
    again.expect("not trusted")
    again.expect("Ctrl\\+D exits")
    exit_with_ctrl_d(again)
    flagged = start_raw("--trust")
    flagged.expect("Ctrl\\+D exits")
    assert "Trust this project" not in flagged.before
    exit_with_ctrl_d(flagged)


# --- /rewind --------------------------------------------------------------------------------


def test_rewind_restores_a_file_changed_by_bash_and_the_conversation(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    local_server.queue(
        bash_call("echo one > notes.txt"),
        answer("Wrote one."),
        bash_call("echo two > notes.txt && echo new > added.txt", "call_2"),
        answer("Wrote two."),
    )
    child = spawn()
    child.send("first turn\r")
    child.expect("Wrote one.")
    footer(child)
    child.send("second turn\r")
    child.expect("Wrote two.")
    footer(child)
    assert (project / "notes.txt").read_text() == "two\n"
    child.send("/rewind\r")
    child.expect("1. first turn")
    child.expect("2. second turn")
    child.expect("rewind to before which turn\\? \\(1-2")
    child.send("7\r")
    child.expect("answer a turn number from 1 to 2")
    child.send("2\r")
    child.expect("restore what\\?")
    child.send("\r")  # Enter: code and conversation
    child.expect("delete  added.txt")  # sorted by path
    child.expect("restore notes.txt")
    child.expect("apply these changes\\? \\[y/N\\]")
    assert (project / "notes.txt").read_text() == "two\n"  # listed, not yet touched
    child.send("y\r")
    child.expect("rewound to before turn 2: 2 file\\(s\\) restored")
    child.expect("conversation moved")
    footer(child)
    assert (project / "notes.txt").read_text() == "one\n"
    assert not (project / "added.txt").exists()
    child.expect("second turn")  # the rewound turn's prompt is back in the input line
    child.send("\x03")  # clear it
    local_server.queue(answer("After the rewind."))
    child.send("third turn\r")
    child.expect("After the rewind.")
    footer(child)
    exit_with_ctrl_d(child)
    texts = user_texts(local_server.requests[-1])
    assert texts[-1] == "third turn" and "first turn" in texts and "second turn" not in texts


def test_rewind_cancelled_or_given_bad_arguments_changes_nothing(
    spawn: Any, local_server: LocalServer, dirs: tuple[Path, Path]
) -> None:
    _, project = dirs
    local_server.queue(bash_call("echo one > notes.txt"), answer("Wrote one."))
    child = spawn()
    child.send("/rewind\r")
    child.expect("no user turns on this branch")
    child.send("first turn\r")
    child.expect("Wrote one.")
    footer(child)
    child.send("/rewind two\r")
    child.expect("usage: /rewind")
    child.send("/rewind 5\r")
    child.expect("this branch has 1 user turn")
    child.send("/rewind 1 code\r")
    child.expect("delete  notes.txt")
    child.expect("apply these changes\\? \\[y/N\\]")
    child.send("\r")  # Enter: no
    child.expect("rewind cancelled; nothing changed")
    exit_with_ctrl_d(child)
    assert (project / "notes.txt").read_text() == "one\n"
