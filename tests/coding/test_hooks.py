"""Command hooks: parsing, matching, the protocol (stdin JSON, exit 2, JSON stdout),
parallel runs, failures and timeouts."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from heron.coding.hooks import HookRunner, parse_hooks
from heron.coding.permissions.scopes import Scope


def runner(
    tmp_path: Path, hooks: dict[str, Any], scope: str = "user", trusted: bool = False, warnings: list[str] | None = None
) -> HookRunner:
    scopes = [Scope(scope, tmp_path / "settings.json", {"hooks": hooks})]  # type: ignore[arg-type]
    groups = parse_hooks(scopes, trusted=trusted, warnings=warnings if warnings is not None else [])
    return HookRunner(groups, tmp_path, lambda: {"PATH": "/usr/bin:/bin"})


def command(text: str, timeout: float | None = None) -> dict[str, Any]:
    hook: dict[str, Any] = {"type": "command", "command": text}
    if timeout is not None:
        hook["timeout"] = timeout
    return hook


def test_matchers_use_heron_and_claude_names(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [command("true")]},
                {"matcher": "Edit|Write", "hooks": [command("true")]},
            ]
        },
    )
    assert r.has("PreToolUse", "bash") and r.has("PreToolUse", "write") and not r.has("PreToolUse", "read")
    assert not r.has("PostToolUse", "bash")
    every = runner(tmp_path, {"PostToolUse": [{"matcher": "*", "hooks": [command("true")]}]})
    assert every.has("PostToolUse", "anything")


def test_the_protocol(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "hooks": [
                        command("cat > in.json; echo 'stop that' >&2; exit 2"),
                        command('cat >/dev/null; echo \'{"decision": "approve", "additionalContext": "ctx"}\''),
                    ]
                }
            ]
        },
    )
    outcome = asyncio.run(r.run("PreToolUse", {"tool_name": "bash", "tool_input": {"command": "ls"}}, "bash"))
    assert outcome.blocked and outcome.reason == "stop that"
    assert outcome.approved and outcome.context == ["ctx"]
    sent = json.loads((tmp_path / "in.json").read_text())
    assert sent["hook_event_name"] == "PreToolUse" and sent["cwd"] == str(tmp_path)
    assert sent["tool_input"] == {"command": "ls"}


def test_json_block_and_plain_stdout(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        command('echo \'{"decision": "block", "reason": "no prompts on friday"}\''),
                        command("echo plain context"),
                        command("echo '{broken json'"),
                    ]
                }
            ]
        },
    )
    outcome = asyncio.run(r.run("UserPromptSubmit", {"prompt": "hi"}))
    assert outcome.blocked and "no prompts on friday" in outcome.reason
    assert "plain context" in outcome.context and "{broken json" in outcome.context
    assert outcome.problems == []


def test_failures_and_timeouts_are_reported_not_raised(tmp_path: Path) -> None:
    r = runner(
        tmp_path,
        {"Stop": [{"hooks": [command("echo boom >&2; exit 1"), command("sleep 20", timeout=0.5), command("exit 0")]}]},
    )
    started = time.monotonic()
    outcome = asyncio.run(r.run("Stop", {}))
    assert time.monotonic() - started < 10
    problems = outcome.problems
    assert any("failed with exit code 1: boom" in p for p in problems)
    assert any("timed out after 0.5 s and was killed" in p for p in problems)
    assert not outcome.blocked


def test_hooks_of_one_event_run_in_parallel(tmp_path: Path) -> None:
    r = runner(tmp_path, {"Stop": [{"hooks": [command("sleep 1") for _ in range(4)]}]})
    started = time.monotonic()
    asyncio.run(r.run("Stop", {}))
    assert time.monotonic() - started < 3.5  # one after the other would take 4 s


def test_bad_configuration_is_warned_about(tmp_path: Path) -> None:
    warnings: list[str] = []
    r = runner(
        tmp_path,
        {
            "NoSuchEvent": [],
            "PreToolUse": "x",
            "PostToolUse": [
                {"matcher": "(", "hooks": [command("true")]},
                {"hooks": [{"type": "prompt"}]},
                {"hooks": [command("true", timeout=-1)]},
                "nope",
            ],
        },
        warnings=warnings,
    )
    text = "\n".join(warnings)
    for expected in (
        "unknown event",
        "must be an array",
        "not a regular expression",
        "a hook must be",
        "timeout must be a positive",
        'needs a "hooks" array',
    ):
        assert expected in text
    assert len(r.groups) == 1 and r.groups[0].hooks[0].timeout == 60


def test_project_hooks_need_trust(tmp_path: Path) -> None:
    warnings: list[str] = []
    hooks = {"Stop": [{"hooks": [command("true")]}]}
    assert runner(tmp_path, hooks, scope="project", warnings=warnings).groups == []
    assert "trusted project" in warnings[0]
    assert len(runner(tmp_path, hooks, scope="project", trusted=True).groups) == 1
