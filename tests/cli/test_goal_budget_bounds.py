"""A goal budget too large to be one: a clear error everywhere, nothing written.

``--goal-budget 1000…0`` (400 digits) raised ``OverflowError`` (the budget went through a
float, which is infinite there); 20 digits were rounded. Budgets are read exactly and
bounded (``heron.context.continuity.goal.MAX_BUDGET``): ``--goal-budget``, ``/goal --budget`` as a
``-p`` prompt and as an rpc prompt, and the SDK's ``goal.set`` all say what is allowed.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from heron.context.continuity.goal import MAX_BUDGET, GoalError, check_budget, parse_budget
from tests.cli.test_print_json_e2e import TIMEOUT, Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

HUGE = "1" + "0" * 400


def test_a_budget_is_read_exactly_up_to_the_bound() -> None:
    assert parse_budget("999999999999") == 999_999_999_999
    assert parse_budget("1000000000000") == MAX_BUDGET
    assert parse_budget("0.5m") == 500_000 and parse_budget("1.0000001m") == 1_000_000


@pytest.mark.parametrize("raw", [HUGE, HUGE + "k", "1000000000001", "1e400", "1000000.5m", "9" * 20])
def test_a_budget_past_the_bound_is_refused_with_the_bound(raw: str) -> None:
    with pytest.raises(GoalError) as caught:
        parse_budget(raw)
    text = str(caught.value)
    if raw == "1e400":
        assert "invalid token budget" in text
    else:
        assert "too large: at most 1,000,000,000,000 tokens" in text
        assert len(text) < 200  # 400 digits are not repeated back in full


def test_a_budget_given_as_a_number_is_checked_too() -> None:
    assert check_budget(5_000) == 5_000
    for bad in (10**400, 999, True, 1.5e3):
        with pytest.raises(GoalError):
            check_budget(bad)  # type: ignore[arg-type]


def run(project: Project, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*heron_command(), *args],
        cwd=project.cwd,
        env=project.env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )


def test_goal_budget_flag_slash_goal_and_rpc(project: Project, local_server: LocalServer) -> None:
    base = openai_args(local_server)
    done = run(project, *base, "--goal", "ship it", "--goal-budget", HUGE, "-p", "go")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--goal: token budget" in done.stderr and "too large: at most 1,000,000,000,000 tokens" in done.stderr
    assert project.session_files() == [] and local_server.requests == []  # nothing started

    local_server.queue(openai_reply("hello"))
    assert run(project, *base, "-p", "hi").returncode == 0
    (session,) = project.session_files()
    before = session.read_bytes()
    done = run(project, *base, "-c", "-p", f"/goal --budget {HUGE} ship it")
    assert done.returncode == 1 and "Traceback" not in done.stderr and done.stdout == ""
    assert "/goal: token budget" in done.stderr and "too large" in done.stderr
    assert session.read_bytes() == before  # no goal written

    lines = json.dumps({"id": 1, "type": "prompt", "message": f"/goal --budget {HUGE}k ship it"}) + "\n"
    done = run(project, *base, "-c", "--mode", "rpc", stdin=lines)
    assert done.returncode == 0 and "Traceback" not in done.stderr
    (end,) = [e for e in map(json.loads, done.stdout.splitlines()) if e["type"] == "run_end"]
    assert end["error_kind"] == "invalid_command" and "too large" in end["error"]
    assert Path(session).read_bytes() == before
    assert len(local_server.requests) == 1  # only the first prompt's
