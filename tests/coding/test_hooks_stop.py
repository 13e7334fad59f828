"""Stop and SubagentStop hooks that make the agent go on: the decision, the cap, what
stops a continuation, and what a sub-agent runs (faux provider, real hook processes)."""

from __future__ import annotations

import json
from pathlib import Path

from heron.agent.messages import ExtensionMessage
from heron.ai.providers.faux import FauxProvider, text, tool_call
from heron.coding.assembly import assemble_session
from heron.coding.hooks import HOOK_MESSAGE_TYPE, HookOutcome, continuation, max_continuations, parse_hooks
from heron.coding.permissions.scopes import Scope
from heron.coding.runtime import CodingSession
from heron.coding.session_spec import SessionSpec


def scope(name: str, hooks: dict[str, object], path: str = "/s.json") -> Scope:
    return Scope(name, Path(path), {"hooks": hooks})  # type: ignore[arg-type]


def test_continuation_follows_the_decision() -> None:
    assert continuation(HookOutcome()) is None
    assert continuation(HookOutcome(blocked=True, reasons=["run the tests"])) == "run the tests"
    assert continuation(HookOutcome(blocked=True)) == "A stop hook asked you to keep going."
    assert continuation(HookOutcome(blocked=True, halted=True, reasons=["x"])) is None  # continue: false wins


def test_max_continuations_setting() -> None:
    warnings: list[str] = []
    assert max_continuations([], trusted=False, warnings=warnings) == 5
    assert (
        max_continuations(
            [scope("user", {"maxContinuations": 2}), scope("project", {"maxContinuations": 9})],
            trusted=False,
            warnings=warnings,
        )
        == 2
    )  # an untrusted project cannot raise it
    assert (
        max_continuations(
            [scope("user", {"maxContinuations": 2}), scope("project", {"maxContinuations": 0})],
            trusted=True,
            warnings=warnings,
        )
        == 0
    )
    assert warnings == []
    assert max_continuations([scope("user", {"maxContinuations": "lots"})], trusted=False, warnings=warnings) == 5
    assert "must be a whole number" in warnings[0]
    groups = parse_hooks([scope("user", {"maxContinuations": 1, "Stop": []})], trusted=False, warnings=warnings)
    assert groups == [] and len(warnings) == 1  # not reported as an unknown event


def with_hooks(home: Path, hooks: dict[str, object]) -> None:
    (home / "settings.json").write_text(json.dumps({"hooks": hooks}))


def command(script: str) -> list[dict[str, object]]:
    return [{"hooks": [{"type": "command", "command": script}]}]


def make(tmp_path: Path, home: Path, faux: FauxProvider) -> CodingSession:
    project = tmp_path / "proj"
    project.mkdir(exist_ok=True)
    return assemble_session(SessionSpec(cwd=project, model=faux.model(), home=home))  # with task: sub-agents


async def test_the_cap_stops_the_continuations(tmp_path: Path, home: Path, faux: FauxProvider) -> None:
    with_hooks(home, {"maxContinuations": 1, "Stop": command("cat >/dev/null; echo 'not yet' >&2; exit 2")})
    s = make(tmp_path, home, faux)
    faux.queue(text("first"), text("second"), text("third"))
    added = await s.prompt("go")
    assert len(faux.requests) == 2
    feedback = [m for m in added if isinstance(m, ExtensionMessage)]
    assert len(feedback) == 1 and feedback[0].custom_type == HOOK_MESSAGE_TYPE
    assert feedback[0].content == "Stop hook feedback:\nnot yet"


async def test_continue_false_lets_it_stop(tmp_path: Path, home: Path, faux: FauxProvider) -> None:
    out = json.dumps({"decision": "block", "reason": "more", "continue": False})
    with_hooks(home, {"Stop": command(f"cat >/dev/null; echo '{out}'")})
    s = make(tmp_path, home, faux)
    faux.queue(text("first"), text("second"))
    await s.prompt("go")
    assert len(faux.requests) == 1


async def test_a_failing_stop_hook_is_reported_and_the_run_ends(tmp_path: Path, home: Path, faux: FauxProvider) -> None:
    with_hooks(home, {"Stop": command("exit 7")})
    s = make(tmp_path, home, faux)
    faux.queue(text("first"), text("second"))
    await s.prompt("go")
    assert len(faux.requests) == 1
    assert any(r.kind == "hook" and "exit code 7" in r.recover for r in s.ledger.records)


async def test_a_subagent_runs_subagent_stop_not_the_prompt_hooks(
    tmp_path: Path, home: Path, faux: FauxProvider
) -> None:
    log = tmp_path / "events.txt"
    script = tmp_path / "record.py"
    script.write_text(
        f"import json, sys\nevent = json.load(sys.stdin)['hook_event_name']\n"
        f"open({str(log)!r}, 'a').write(event + '\\n')\n"
    )
    record = f"python3 {script}"
    with_hooks(home, {event: command(record) for event in ("SessionStart", "UserPromptSubmit", "Stop", "SubagentStop")})
    s = make(tmp_path, home, faux)
    faux.queue(
        tool_call("task", {"description": "do a small job", "prompt": "child work"}),
        text("child answer"),
        text("parent answer"),
    )
    await s.prompt("go")
    assert log.read_text().split() == ["SessionStart", "UserPromptSubmit", "SubagentStop", "Stop"]
