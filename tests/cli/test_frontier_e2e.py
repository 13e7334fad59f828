"""The frontier survives compactions and restarts, through the real ``heron`` command.

A 16,384-token model behind a local OpenAI-compatible server (the one of
``test_context_restarts``), twelve turns of 120 KB reads and 100 KB bash output, a goal
given with ``--goal`` and a skill invoked with ``/skill:deploy`` in turn 1. Driven by one
``heron --mode rpc`` process and by one ``heron -p`` process per turn, the two must send
the same requests; the goal block and the skill's body must be in every request after
they were given, byte for byte, through at least three compactions.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from heron.cli.modes.print_mode import LIMIT_EXIT
from heron.context.continuity.goal import Goal, render_goal
from tests.cli.test_context_restarts import (
    TIMEOUT,
    Server,
    heron,
    make_project,
    normalised,
    servers,  # noqa: F401 - the fixture
    start,
)
from tests.coding.test_small_window import BASH_BYTES, call_reply, count_tokens, text_reply
from tests.support.http_server import Recorded, Reply
from tests.support.sandbox_fixtures import bubblewrap, no_bwrap
from tests.support.summaries import is_summary_body, is_summary_text

__all__ = ["bubblewrap", "no_bwrap"]  # fixtures

TURNS = 12
GOAL = "Ship the release: every data file checked, the build log clean."
SKILL = """---
name: deploy
description: How releases are deployed in this project.
---
# Deploying

1. Run the checks before anything else.
2. Never deploy on a Friday; say so if asked to.
3. Tag the release as vX.Y.Z and write the tag into RELEASES.md.
"""


PLAN = "The plan:\n1. check every data file\n2. read the build log\n3. tag v1.2.0"


class FrontierServer(Server):
    """The restarts server, reading the turn number anywhere in the prompt (a skill's
    body comes first in turn 1)."""

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        messages = body["messages"]
        last = messages[-1]
        content = last.get("content") or ""
        content = content if isinstance(content, str) else content[0]["text"]
        found = re.search(r"turn (\d+):", content)
        if last["role"] != "user" or is_summary_body(body) or found is None:
            return super().__call__(request)
        with self.lock:
            self.bodies.append(body)
        prompt, _ = count_tokens(body)
        if "make a plan" in content:
            return text_reply(PLAN, prompt)
        number = int(found.group(1))
        if number % 2 == 0:
            return call_reply(f"call_{number}", "read", {"path": f"data/file{number % 4}.txt"}, prompt)
        line = f"output line %05d of turn {number:02d} {'.' * 20}\\n"
        command = f"for i in $(seq 1 {BASH_BYTES // 50}); do printf '{line}' $i; done"
        return call_reply(f"call_{number}", "bash", {"command": command}, prompt)


def prompt(n: int) -> str:
    text = f"turn {n}: " + ("read the data file" if n % 2 == 0 else "print 100 KB of output with bash")
    return f"/skill:deploy {text}" if n == 1 else text


def project(root: Path, server: Any) -> tuple[Path, dict[str, str]]:
    cwd, env = make_project(root, server)
    skill = cwd / ".heron" / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    settings = root / "home" / "settings.json"
    data = json.loads(settings.read_text())
    data["pruning"] = {"enabled": False}  # every reduction is a compaction: several in twelve turns
    data["goal"] = {"maxTurns": 0}  # the goal leads the requests; its loop is test_goal_loop_e2e's
    settings.write_text(json.dumps(data))
    return cwd, env


def drive_print(cwd: Path, env: dict[str, str]) -> None:
    for n in range(TURNS):
        flags = ["--continue"] if n else ["--goal", GOAL]
        args = [*heron(), "--model", "local/small", *flags, "-p", prompt(n)]
        done = subprocess.run(
            args, cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT
        )
        assert done.returncode == 0, f"turn {n}: {done.stderr[-2000:]}"


def drive_rpc(cwd: Path, env: dict[str, str]) -> None:
    child = subprocess.Popen(
        [*heron(), "--model", "local/small", "--goal", GOAL, "--mode", "rpc"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        for n in range(TURNS):
            child.stdin.write(json.dumps({"id": n, "type": "prompt", "message": prompt(n)}) + "\n")
            child.stdin.flush()
            for raw in child.stdout:
                event = json.loads(raw)
                if event.get("type") == "run_end" and event.get("id") == n:
                    assert event.get("error") is None, f"turn {n}: {event}"
                    break
    finally:
        child.stdin.close()
        child.wait(timeout=30)


def compactions(home: Path) -> int:
    files = list((home / "sessions").rglob("*.jsonl"))
    assert len(files) == 1
    return sum(1 for line in files[0].read_text().splitlines() if json.loads(line).get("type") == "compaction")


def test_goal_and_skill_survive_compactions_and_restarts(
    tmp_path: Path,
    servers: Any,  # noqa: F811
    bubblewrap: str | None,
) -> None:
    """With bubblewrap and without it (a PATH without it: the bash results carry the
    sandbox's note, once a session)."""
    one, many = FrontierServer(), FrontierServer()
    cwd_one, env_one = project(tmp_path / "rpc1", start(servers, one))
    cwd_many, env_many = project(tmp_path / "prnt", start(servers, many))
    for env in (env_one, env_many):
        env["PATH"] = bubblewrap or env["PATH"]
    drive_rpc(cwd_one, env_one)
    drive_print(cwd_many, env_many)
    assert one.rejected == many.rejected == 0
    assert compactions(tmp_path / "prnt" / "home") >= 3
    assert compactions(tmp_path / "rpc1" / "home") >= 3

    goal_block = render_goal(Goal(text=GOAL))
    skill_file = cwd_many / ".heron" / "skills" / "deploy" / "SKILL.md"
    body = SKILL.split("---\n", 2)[2].strip()
    skill_block = (
        f'<skill name="deploy" location="{skill_file}">\n'
        f"Relative paths in this skill resolve against {skill_file.parent}.\n\n{body}\n</skill>"
    )
    turns = [b for b in many.bodies if not is_summary_body(b)]
    assert turns, "the session's own requests"
    skill_seen = False
    for body_json in turns:
        messages = body_json["messages"]
        assert messages[1] == {"role": "user", "content": goal_block}, "the goal leads every request, verbatim"
        text = json.dumps(messages)
        skill_seen = skill_seen or json.dumps(skill_block)[1:-1] in text
        if skill_seen:
            assert json.dumps(skill_block)[1:-1] in text, "the skill's body is in every later request"
    assert skill_seen
    assert any("Skills you invoked earlier" in json.dumps(b) for b in turns), "re-injected after a compaction"
    assert any("Your last steps before the history was compacted" in json.dumps(b) for b in turns)
    rpc_bodies, print_bodies = normalised(one.bodies, tmp_path / "rpc1"), normalised(many.bodies, tmp_path / "prnt")
    assert [b for b in rpc_bodies if not is_summary_text(b)] == [b for b in print_bodies if not is_summary_text(b)]


def test_goal_budget_stops_the_run_and_can_be_raised(tmp_path: Path, servers: Any) -> None:  # noqa: F811
    handler = FrontierServer()
    cwd, env = project(tmp_path, start(servers, handler))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*heron(), "--model", "local/small", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    first = run("--goal", GOAL, "--goal-budget", "2k", "-p", "turn 0: read the data file")
    assert first.returncode == LIMIT_EXIT
    assert "the goal's token budget is spent" in first.stderr
    sent = len(handler.bodies)
    again = run("--continue", "-p", "turn 2: read the data file")
    assert again.returncode == LIMIT_EXIT and "budget is spent" in again.stderr
    assert len(handler.bodies) == sent, "no request once the budget is spent"
    raised = run("--continue", "-p", "/goal --budget 1m")
    assert raised.returncode == 0, raised.stderr
    assert "Goal budget changed" in raised.stdout and "1,000,000" in raised.stdout
    done = run("--continue", "-p", "turn 4: read the data file")
    assert done.returncode == 0, done.stderr
    last = handler.bodies[-1]["messages"][1]["content"]
    assert last.startswith(render_goal(Goal(text=GOAL)).splitlines()[0])
    assert "Token budget for this goal: 1,000,000" in last
    shown = run("--continue", "-p", "/goal")
    assert shown.returncode == 0 and GOAL in shown.stdout and "of 1,000,000 tokens spent" in shown.stdout
    [session_file] = (Path(env["HERON_HOME"]) / "sessions").rglob("*.jsonl")
    context = subprocess.run(
        [*heron(), "sessions", "context", str(session_file), "--json"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    goal = json.loads(context.stdout)["goal"]
    assert goal["text"] == GOAL and goal["budget"] == 1_000_000 and goal["spent"] > 0
    cleared = run("--continue", "-p", "/goal clear")
    assert cleared.stdout.strip() == "Goal cleared."
    run("--continue", "-p", "turn 6: read the data file")
    assert GOAL not in json.dumps(handler.bodies[-1]), "a cleared goal is no longer sent"


def test_bad_goal_input_is_refused_with_a_clear_error(tmp_path: Path, servers: Any) -> None:  # noqa: F811
    handler = FrontierServer()
    cwd, env = project(tmp_path, start(servers, handler))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*heron(), "--model", "local/small", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

    empty = run("--goal", "   ", "-p", "turn 0: read the data file")
    assert empty.returncode == 2 and "the goal is empty" in empty.stderr
    bad = run("--goal", GOAL, "--goal-budget", "lots", "-p", "turn 0: read")
    assert bad.returncode == 2 and "invalid token budget 'lots'" in bad.stderr
    alone = run("--goal-budget", "200k", "-p", "turn 0: read")
    assert alone.returncode == 2 and "--goal-budget needs --goal" in alone.stderr
    acp = run("--mode", "acp", "--goal", GOAL)
    assert acp.returncode == 2 and "type /goal there" in acp.stderr
    assert handler.bodies == [], "nothing was sent"
    typed = run("-p", "/goal --budget 12 do it")
    assert typed.returncode == 1 and "token budget '12' is too small" in typed.stderr
    none = run("--continue", "-p", "/goal --budget 200k")
    assert none.returncode == 1 and "there is no goal" in none.stderr
    shown = run("--continue", "-p", "/goal")
    assert shown.returncode == 0 and "No goal is set" in shown.stdout
    assert handler.bodies == [], "a /goal command never calls the model"


def test_plan_mode_answer_is_reinjected_after_every_compaction(tmp_path: Path, servers: Any) -> None:  # noqa: F811
    handler = FrontierServer()
    cwd, env = project(tmp_path, start(servers, handler))
    for n in range(TURNS):
        text = f"turn {n}: make a plan" if n == 0 else prompt(n).replace("/skill:deploy ", "")
        flags = ["--permission-mode", "plan"] if n == 0 else ["--continue"]
        done = subprocess.run(
            [*heron(), "--model", "local/small", *flags, "-p", text],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        assert done.returncode == 0, f"turn {n}: {done.stderr[-2000:]}"
    assert compactions(tmp_path / "home") >= 3
    block = json.dumps(f"<plan>\n{PLAN}\n</plan>")[1:-1]
    turns = [json.dumps(b) for b in handler.bodies if not is_summary_body(b)]
    summarised = [t for t in turns if "compacted into the following summary" in t]
    assert summarised, "compactions happened"
    for text in summarised:  # after every compaction, the plan verbatim, or its answer still kept
        assert block in text or json.dumps(PLAN)[1:-1] in text
    assert any(block in t for t in summarised)
