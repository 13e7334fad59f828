"""Issue 16 audit: rewind, bash timeouts and prompt hooks through the real entry points
(``heron -p`` / ``-c`` turns against a local OpenAI-format server, then ``heron rewind``)."""

from __future__ import annotations

import json
import os
import time

from tests.cli.test_control_e2e import bash, rewind, run_calls
from tests.cli.test_print_json_e2e import Project, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


def three_turns(project: Project, server: LocalServer) -> None:
    steps = ["echo one > notes.txt", "echo two > notes.txt", "echo three > notes.txt"]
    for n, command in enumerate(steps):
        server.queue(openai_reply("", [bash(f"c{n}", command)]), openai_reply(f"done {n + 1}"))
        result = project.run(*openai_args(server), *(["-c"] if n else []), "-p", f"turn {n + 1}")
        assert result.code == 0, result.err


def test_rewind_turn_numbers_out_of_range_are_errors_that_touch_nothing(
    project: Project, local_server: LocalServer
) -> None:
    three_turns(project, local_server)
    before = project.session_files()[0].read_text()
    for bad in ("0", "4", "-1"):
        result = rewind(project, "--to", bad, "--yes")
        assert result.returncode != 0 and result.stderr.strip(), (bad, result)
        assert "Traceback" not in result.stderr
    assert (project.cwd / "notes.txt").read_text() == "three\n"
    assert project.session_files()[0].read_text() == before


def test_conversation_only_rewind_keeps_the_code_and_the_next_turn_sends_the_rewound_history(
    project: Project, local_server: LocalServer
) -> None:
    three_turns(project, local_server)
    done = rewind(project, "--to", "2", "--conversation", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "notes.txt").read_text() == "three\n"  # code untouched
    local_server.queue(openai_reply("again"))
    result = project.run(*openai_args(local_server), "-c", "-p", "turn 2 again")
    assert result.code == 0, result.err
    messages = local_server.requests[-1].json()["messages"]
    assert [m["content"] for m in messages if m["role"] == "user"] == ["turn 1", "turn 2 again"]
    dry = rewind(project)  # the listing follows the new branch
    assert "turn 2 again" in dry.stdout and "turn 3" not in dry.stdout


def test_bash_default_timeout_from_settings_stops_a_long_command(project: Project, local_server: LocalServer) -> None:
    project.write_settings({"bash": {"defaultTimeoutMs": 1500, "maxTimeoutMs": 3000}})
    start = time.monotonic()
    results = run_calls(
        project,
        local_server,
        [
            bash("sleep", "sleep 100000"),
            ("long", "bash", {"command": "sleep 100000", "timeout": 999999}),
            bash("ok", "echo after"),
        ],
    )
    assert time.monotonic() - start < 60
    assert "timed out" in results["sleep"].lower() or "timeout" in results["sleep"].lower(), results["sleep"]
    assert "timed out" in results["long"].lower() or "timeout" in results["long"].lower(), results["long"]
    assert results["ok"].strip() == "after"


def test_user_prompt_submit_block_stops_the_prompt_before_the_model(
    project: Project, local_server: LocalServer
) -> None:
    project.write_settings(
        {
            "hooks": {
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {
                                "type": "command",
                                "command": "grep -q forbidden && { echo 'no forbidden words' >&2; exit 2; }; exit 0",
                            }
                        ]
                    }
                ]
            }
        }
    )
    result = project.run(*openai_args(local_server), "-p", "say the forbidden word")
    assert result.code != 0
    assert local_server.requests == []
    records = project.session_lines() if project.session_files() else []
    hooks = [
        r["data"]["detail"] for r in records if r.get("customType") == "heron.ledger" and r["data"]["kind"] == "hook"
    ]
    assert not records or any(d.get("event") == "UserPromptSubmit" for d in hooks), json.dumps(records)[:500]


def test_rewind_brings_back_what_bash_deleted_and_leaves_big_and_ignored_files(
    project: Project, local_server: LocalServer
) -> None:
    (project.cwd / ".gitignore").write_text("build/\n")
    steps = [
        "mkdir -p src/deep build && echo keep > src/deep/a.txt && echo out > build/o.txt && "
        "head -c 3000000 /dev/zero > big.bin",
        "rm -rf src && echo changed > build/o.txt && echo x >> big.bin && chmod +x greet.py",
    ]
    for n, command in enumerate(steps):
        local_server.queue(openai_reply("", [bash(f"c{n}", command)]), openai_reply("done"))
        assert project.run(*openai_args(local_server), *(["-c"] if n else []), "-p", f"turn {n + 1}").code == 0
    dry = rewind(project, "--to", "2", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "src/deep/a.txt" in dry.stdout and "build/o.txt" not in dry.stdout
    assert not (project.cwd / "src").exists()
    done = rewind(project, "--to", "2", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "src" / "deep" / "a.txt").read_text() == "keep\n"
    assert (project.cwd / "build" / "o.txt").read_text() == "changed\n"  # ignored: not rewound
    assert (project.cwd / "big.bin").stat().st_size == 3_000_002  # over 2 MB: not rewound
    assert not os.access(project.cwd / "greet.py", os.X_OK)  # the mode came back too


def test_session_start_and_prompt_hook_context_reach_the_model_and_a_failing_hook_does_not_crash(
    project: Project, local_server: LocalServer
) -> None:
    ctx = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ticket ABC-123 is open"}}
    )
    project.write_settings(
        {
            "hooks": {
                "SessionStart": [{"hooks": [{"type": "command", "command": "echo 'branch: feature/x'"}]}],
                "UserPromptSubmit": [
                    {
                        "hooks": [
                            {"type": "command", "command": f"cat >/dev/null; echo '{ctx}'"},
                            {"type": "command", "command": "exit 7"},
                            {"type": "command", "command": "definitely-not-a-program-xyz"},
                        ]
                    }
                ],
            }
        }
    )
    local_server.queue(openai_reply("ok"))
    result = project.run(*openai_args(local_server), "-p", "hello")
    assert result.code == 0 and result.out == "ok\n", result.err
    prompt = [m["content"] for m in local_server.requests[0].json()["messages"] if m["role"] == "user"][-1]
    assert "hello" in prompt and "branch: feature/x" in prompt and "ticket ABC-123 is open" in prompt
    assert "exit code 7" in result.err and "exit code 127" in result.err


def test_a_sub_agent_is_held_to_the_same_rules_and_mode(project: Project, local_server: LocalServer) -> None:
    (project.cwd / "build").mkdir()
    (project.cwd / ".heron").mkdir()
    (project.cwd / ".heron" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    task = ("t", "task", {"description": "clean the build", "prompt": "remove build/ and edit greet.py"})
    local_server.queue(
        openai_reply("", [task]),
        openai_reply("", [bash("c1", "cd . && rm -rf build")]),
        openai_reply("", [("c2", "edit", {"path": "greet.py", "old_text": "world", "new_text": "x"})]),
        openai_reply("child done"),
        openai_reply("parent done"),
    )
    result = project.run(*openai_args(local_server), "--permission-mode", "plan", "-p", "go")
    assert result.code == 0, result.err
    assert (project.cwd / "build").is_dir() and "world" in (project.cwd / "greet.py").read_text()
    child = [m for r in local_server.requests for m in r.json()["messages"] if m["role"] == "tool"]
    texts = {m["tool_call_id"]: m["content"] for m in child}
    assert 'deny rule "Bash(rm:*)"' in texts["c1"], texts
    assert "plan mode is read-only" in texts["c2"], texts
