"""``sandbox.hooks``: hook commands in the sandbox when the setting asks for it (docs/hooks.md,
"Hooks in the sandbox"), through the real ``heron -p``: what a hook may write, that its
exit code still blocks, and a bad value warned about."""

from __future__ import annotations

import json
from pathlib import Path

from heron.coding.permissions.scopes import Scope
from heron.coding.sandbox import sandbox_policy
from tests.cli.test_control_e2e import bash, run_calls
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sandbox_fixtures import outside, sandbox_ready

__all__ = ["outside", "project", "sandbox_ready"]


def hooks(command: str, *, sandboxed: object) -> dict[str, object]:
    group = {"matcher": "Bash", "hooks": [{"type": "command", "command": command}]}
    return {"hooks": {"PreToolUse": [group]}, "sandbox": {"hooks": sandboxed}}


def test_a_sandboxed_hook_writes_the_project_but_nothing_outside(
    project: Project, local_server: LocalServer, outside: Path, sandbox_ready: None
) -> None:
    command = f"touch hook-ran; touch {outside}/escaped; ls -d /proc/[0-9]* | wc -l > procs.txt; true"
    project.write_settings(hooks(command, sandboxed=True))
    run_calls(project, local_server, [bash("b", "true")])
    assert (project.cwd / "hook-ran").exists()
    assert not (outside / "escaped").exists()
    # its own PID namespace: bwrap, the shell, ls, wc (heron and the test runner are not there)
    assert int((project.cwd / "procs.txt").read_text()) <= 5

    # the setting off (the default): the user's own command runs as the user
    project.write_settings(hooks(command, sandboxed=False))
    run_calls(project, local_server, [bash("b", "true")])
    assert (outside / "escaped").exists()


def test_a_sandboxed_hook_still_blocks_with_exit_2(
    project: Project, local_server: LocalServer, sandbox_ready: None
) -> None:
    project.write_settings(hooks("echo 'not today' >&2; exit 2", sandboxed=True))
    results = run_calls(project, local_server, [bash("b", "touch made-it")])
    assert "not today" in results["b"] and "PreToolUse hook blocked" in results["b"]
    assert not (project.cwd / "made-it").exists()


def test_the_setting_is_read_and_an_untrusted_project_cannot_turn_it_off(tmp_path: Path) -> None:
    user = Scope("user", tmp_path / "u.json", {"sandbox": {"hooks": True}})
    project = Scope("project", tmp_path / "p.json", {"sandbox": {"hooks": False}})
    bad = Scope("project", tmp_path / "b.json", {"sandbox": {"hooks": "yes"}})
    policy = sandbox_policy([user, project], [], project=tmp_path, home=tmp_path / "h", trusted=False)
    assert policy.hooks is True and any("may not loosen" in w for w in policy.warnings)
    trusted = sandbox_policy([user, project], [], project=tmp_path, home=tmp_path / "h", trusted=True)
    assert trusted.hooks is False
    odd = sandbox_policy([bad], [], project=tmp_path, home=tmp_path / "h", trusted=True)
    assert odd.hooks is False and any("sandbox.hooks must be true or false" in w for w in odd.warnings)
    tightened = sandbox_policy(
        [Scope("project", tmp_path / "p.json", {"sandbox": {"hooks": True}})],
        [],
        project=tmp_path,
        home=tmp_path / "h",
        trusted=False,
    )
    assert tightened.hooks is True and json.dumps(list(tightened.warnings)) == "[]"
