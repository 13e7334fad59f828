"""Permissions, hooks, secrets and rewind through the real entry point: ``heron -p``
subprocesses against a local server speaking the OpenAI Chat Completions format, which
scripts the model's tool calls; the assertions look at what the server received (the
tool results the model saw), the files, and the session."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, openai_tool_results, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]  # the fixture, imported for the tests below


def run_calls(
    project: Project, server: LocalServer, calls: list[tuple[str, str, dict[str, object]]], *flags: str
) -> dict[str, str]:
    """One task whose model makes ``calls`` (one per answer) then says done; returns the
    tool results the model was sent, by call id."""
    server.queue(*(openai_reply("", [call]) for call in calls), openai_reply("done"))
    result = project.run(*openai_args(server), *flags, "-p", "go")
    assert result.code == 0, result.err
    assert result.out == "done\n"
    return openai_tool_results(server.requests[-1])


def bash(call_id: str, command: str) -> tuple[str, str, dict[str, object]]:
    return (call_id, "bash", {"command": command})


def test_bash_children_do_not_see_the_keys_heron_was_started_with(project: Project, local_server: LocalServer) -> None:
    project.env.update(
        {
            "HERON_API_KEY": "sk-heron-secret-1",
            "OPENAI_API_KEY": "sk-openai-secret-2",
            "GITHUB_TOKEN": "ghp-secret-3",
            "AWS_SECRET_ACCESS_KEY": "aws-secret-4",
            "MY_SERVICE_PASSWORD": "pw-secret-5",
            "ODD_NAME": "sk-heron-secret-1",
            "CUSTOM_KEY_VAR": "sk-custom-6",
            "HARMLESS": "visible-value",
        }
    )
    project.write_models({"custom": {"apiKey": "CUSTOM_KEY_VAR", "models": []}})
    results = run_calls(project, local_server, [bash("env", "env")])
    shown = results["env"]
    assert "HARMLESS=visible-value" in shown
    for secret in (
        "sk-heron-secret-1",
        "sk-openai-secret-2",
        "ghp-secret-3",
        "aws-secret-4",
        "pw-secret-5",
        "sk-custom-6",
    ):
        assert secret not in shown
    # The key reached the server, so heron itself still had it.
    assert local_server.requests[0].headers.get("authorization") == "Bearer sk-heron-secret-1"


def test_pass_through_from_user_settings_keeps_a_named_variable(project: Project, local_server: LocalServer) -> None:
    project.env.update({"GITHUB_TOKEN": "ghp-kept", "NPM_TOKEN": "npm-dropped"})
    project.write_settings({"env": {"passThrough": ["GITHUB_TOKEN"]}})
    shown = run_calls(project, local_server, [bash("env", "env")])["env"]
    assert "GITHUB_TOKEN=ghp-kept" in shown and "npm-dropped" not in shown


def test_deny_rule_blocks_a_compound_command_and_quotes_the_rule(project: Project, local_server: LocalServer) -> None:
    (project.cwd / "build").mkdir()
    (project.cwd / ".heron").mkdir()
    (project.cwd / ".heron" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    results = run_calls(project, local_server, [bash("rm", "echo ok && rm -rf build"), bash("ok", "echo fine")])
    assert (project.cwd / "build").is_dir()
    assert 'deny rule "Bash(rm:*)"' in results["rm"] and "Permission denied" in results["rm"]
    assert results["ok"].strip() == "fine"  # the run went on
    records = [json.loads(line) for line in project.session_files()[0].read_text().splitlines()]
    decisions = [
        r["data"]["detail"]
        for r in records
        if r.get("customType") == "heron.ledger" and r["data"]["kind"] == "permission"
    ]
    assert [d["decision"] for d in decisions] == ["deny", "allow"]
    assert decisions[0]["rule"] == "Bash(rm:*)"


def test_plan_mode_blocks_an_edit(project: Project, local_server: LocalServer) -> None:
    call = ("edit", "edit", {"path": "greet.py", "old_text": "world", "new_text": "heron"})
    results = run_calls(
        project, local_server, [("read", "read", {"path": "greet.py"}), call], "--permission-mode", "plan"
    )
    assert "plan mode is read-only" in results["edit"]
    assert "world" in (project.cwd / "greet.py").read_text()


def test_an_ask_in_print_mode_fails_with_the_allow_hint(project: Project, local_server: LocalServer) -> None:
    (project.cwd / ".heron").mkdir()
    (project.cwd / ".heron" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Bash(make:*)"]}}))
    results = run_calls(project, local_server, [bash("make", "make --version")])
    assert "--allow 'Bash(make:*)'" in results["make"] and 'ask rule "Bash(make:*)"' in results["make"]
    assert "Permission needed" in results["make"]


def test_write_outside_the_project_asks_and_names_the_rule_to_add(
    project: Project, local_server: LocalServer, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere.txt"
    (project.cwd / "link").symlink_to(outside)  # a dangling link that leads out of the project
    results = run_calls(project, local_server, [("w", "write", {"path": "link", "content": "x"})])
    assert "outside the project" in results["w"] and f"--allow 'Edit({outside})'" in results["w"]
    assert not outside.exists()
    local_server.requests.clear()
    results = run_calls(
        project, local_server, [("w", "write", {"path": "link", "content": "x"})], "--allow", f"Edit({outside})"
    )
    assert outside.read_text() == "x", results["w"]


def test_bad_permission_flags_are_usage_errors(project: Project, local_server: LocalServer) -> None:
    result = project.run(*openai_args(local_server), "--permission-mode", "yolo", "-p", "go")
    assert result.code == 2 and "unknown permission mode 'yolo'" in result.err
    result = project.run(*openai_args(local_server), "--allow", "Bash(", "-p", "go")
    assert result.code == 2 and "is not a rule" in result.err
    assert local_server.requests == []


# --- hooks -------------------------------------------------------------------------


def write_hooks(project: Project, hooks: dict[str, object]) -> None:
    project.write_settings({"hooks": hooks})


def test_pre_tool_use_hook_exiting_2_blocks_with_its_stderr(project: Project, local_server: LocalServer) -> None:
    write_hooks(
        project,
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "cat > hook-input.json; echo 'no shell today' >&2; exit 2"}
                    ],
                }
            ]
        },
    )
    results = run_calls(project, local_server, [bash("b", "touch made-it")])
    assert "no shell today" in results["b"] and "PreToolUse hook blocked" in results["b"]
    assert not (project.cwd / "made-it").exists()
    payload = json.loads((project.cwd / "hook-input.json").read_text())
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == "bash"
    assert payload["tool_input"]["command"] == "touch made-it" and payload["cwd"] == str(project.cwd)
    assert payload["session_id"] and payload["transcript_path"].endswith(".jsonl")


def test_post_tool_use_additional_context_reaches_the_model(project: Project, local_server: LocalServer) -> None:
    out = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "remember: run the linter"}}
    )
    write_hooks(
        project,
        {
            "PostToolUse": [
                {"matcher": "Read|Bash", "hooks": [{"type": "command", "command": f"cat >/dev/null; echo '{out}'"}]}
            ]
        },
    )
    results = run_calls(project, local_server, [("r", "read", {"path": "greet.py"})])
    assert "remember: run the linter" in results["r"] and "hello, world" in results["r"]


def test_a_hook_past_its_timeout_is_killed_and_reported(project: Project, local_server: LocalServer) -> None:
    write_hooks(
        project,
        {"PreToolUse": [{"hooks": [{"type": "command", "command": "sleep 30; touch hook-finished", "timeout": 1}]}]},
    )
    results = run_calls(project, local_server, [bash("b", "echo ran")])
    assert "ran" in results["b"]  # the call went on
    assert "timed out after 1 s and was killed" in results["b"]
    assert not (project.cwd / "hook-finished").exists()


def test_project_hooks_need_trust(project: Project, local_server: LocalServer) -> None:
    (project.cwd / ".heron").mkdir()
    (project.cwd / ".heron" / "settings.json").write_text(
        json.dumps(
            {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "echo project-hook >&2; exit 2"}]}]}}
        )
    )
    results = run_calls(project, local_server, [bash("b", "echo ran")])
    assert results["b"].strip() == "ran"
    local_server.requests.clear()
    results = run_calls(project, local_server, [bash("b", "echo ran")], "--trust")
    assert "project-hook" in results["b"]


# --- checkpoints and rewind ------------------------------------------------------------


def rewind(project: Project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*heron_command(), "rewind", *args],
        cwd=project.cwd,
        env=project.env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_a_file_changed_by_bash_in_turn_3_is_restored_by_rewinding_to_turn_2(
    project: Project, local_server: LocalServer
) -> None:
    (project.cwd / ".gitignore").write_text("ignored.txt\n")
    steps = ["echo one > notes.txt", "echo two >> notes.txt", "echo three > notes.txt && echo new > added.txt"]
    for n, command in enumerate(steps):
        local_server.queue(openai_reply("", [bash(f"c{n}", command)]), openai_reply("done"))
        flags = ["-c"] if n else []
        result = project.run(*openai_args(local_server), *flags, "-p", f"turn {n + 1}")
        assert result.code == 0, result.err
    assert (project.cwd / "notes.txt").read_text() == "three\n"
    (project.cwd / "ignored.txt").write_text("not mine to rewind")

    listing = rewind(project)
    assert listing.returncode == 0 and "  3. turn 3" in listing.stdout

    dry = rewind(project, "--to", "3", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "restore notes.txt" in dry.stdout and "delete  added.txt" in dry.stdout
    assert "ignored.txt" not in dry.stdout
    assert (project.cwd / "notes.txt").read_text() == "three\n"  # nothing touched

    no_tty = rewind(project, "--to", "3")
    assert no_tty.returncode == 1 and "--yes" in no_tty.stderr

    done = rewind(project, "--to", "3", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project.cwd / "notes.txt").read_text() == "one\ntwo\n"  # as it was right before turn 3
    assert not (project.cwd / "added.txt").exists()
    assert (project.cwd / "ignored.txt").read_text() == "not mine to rewind"
    # The conversation went back too: the next -c continues from before turn 3.
    local_server.queue(openai_reply("again"))
    result = project.run(*openai_args(local_server), "-c", "-p", "turn 3 again")
    assert result.code == 0, result.err
    users = [m["content"] for m in local_server.requests[-1].json()["messages"] if m["role"] == "user"]
    assert users == ["turn 1", "turn 2", "turn 3 again"]


def test_rewind_names_files_changed_outside_heron_and_keeps_them(project: Project, local_server: LocalServer) -> None:
    for n in range(2):
        local_server.queue(openai_reply("", [bash(f"c{n}", f"echo {n} > f{n}.txt")]), openai_reply("done"))
        assert project.run(*openai_args(local_server), *(["-c"] if n else []), "-p", f"turn {n + 1}").code == 0
    (project.cwd / "f0.txt").write_text("edited by hand\n")
    done = rewind(project, "--to", "1", "--code", "--yes")
    assert done.returncode == 0, done.stderr
    assert "f0.txt  (changed outside heron; kept" in done.stdout
    assert (project.cwd / "f0.txt").read_text() == "edited by hand\n"
    assert not (project.cwd / "f1.txt").exists()


def test_rewind_errors(project: Project) -> None:
    result = rewind(project, "--to", "1")
    assert result.returncode == 1 and "no sessions for" in result.stderr
