"""How the sandbox drops every capability (issue 37): the probe's steps down when an older
bubblewrap or a stricter kernel refuses one way, and the one builder every sandboxed command
line comes from - the bash tool's, the script tool's and a sandboxed hook's - checked through
the real ``heron -p``. What the dropped capabilities stop is the battery's
(tests/coding/test_sandbox.py, ``ROOT_TRICKS``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from heron.coding.sandbox import SandboxPolicy
from heron.coding.sandbox.bwrap import HARDENINGS, availability, wrap_command
from tests.cli.test_control_e2e import run_calls
from tests.cli.test_print_json_e2e import Project, project
from tests.support.http_server import LocalServer
from tests.support.sandbox_fixtures import sandbox_ready

__all__ = ["project", "sandbox_ready"]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

FAKE_BWRAP = """#!/bin/sh
# refuses the options named in REFUSE, as an older bubblewrap or a stricter kernel does
for arg in "$@"; do
  case " $REFUSE " in *" $arg "*) echo "bwrap: Unknown option $arg" >&2; exit 1;; esac
done
exit 0
"""


@pytest.mark.parametrize(
    ("refused", "euid", "expected"),
    [
        ("", 0, HARDENINGS[0]),
        ("--disable-userns", 0, HARDENINGS[1]),
        ("--disable-userns --unshare-user", 0, HARDENINGS[2]),
        ("--disable-userns --unshare-user --cap-drop", 0, None),
        ("--disable-userns --unshare-user --cap-drop", 1000, ()),
    ],
)
def test_the_probe_takes_the_strongest_way_to_drop_capabilities(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refused: str, euid: int, expected: tuple[str, ...] | None
) -> None:
    """An older bubblewrap (no ``--disable-userns``), a kernel without user namespaces, a
    set-user-ID bubblewrap that refuses ``--cap-drop``: the next way is taken; root with
    none gets no sandbox, a normal user (who has no capability to keep) the plain one."""
    import heron.coding.sandbox.bwrap as bwrap

    fake = tmp_path / "bwrap"
    fake.write_text(FAKE_BWRAP)
    fake.chmod(0o755)
    monkeypatch.setenv("REFUSE", refused)
    monkeypatch.setattr(bwrap.os, "geteuid", lambda: euid)
    monkeypatch.setattr(bwrap, "_probed", {})
    state = availability(str(fake))
    if expected is None:
        assert not state.ok and state.reason.startswith("bubblewrap cannot drop root's capabilities")
        assert "Unknown option --cap-drop" in state.reason
    else:
        assert state.ok and state.hardening == expected
        policy = SandboxPolicy(project=tmp_path, home=tmp_path / "home")
        argv = wrap_command(policy, ["true"], tmp_path, binary=str(fake), hardening=state.hardening)
        assert argv[: 1 + len(expected)] == [str(fake), *expected]


def test_bash_script_and_hooks_run_in_the_one_sandbox_without_capabilities(
    project: Project, local_server: LocalServer, sandbox_ready: None
) -> None:
    """Every command line of a sandbox comes from one builder: the bash tool, the script
    tool and a sandboxed hook all run without a capability, whoever runs heron."""
    hook = {"matcher": "Bash", "hooks": [{"type": "command", "command": "grep CapEff /proc/self/status > hook.txt"}]}
    project.write_settings({"hooks": {"PreToolUse": [hook]}, "sandbox": {"hooks": True}})
    code = "print(open('/proc/self/status').read().split('CapEff:')[1].split()[0])"
    calls = [("b", "bash", {"command": "grep CapEff /proc/self/status"}), ("s", "script", {"code": code})]
    results = run_calls(project, local_server, calls)
    zero = "0" * 16
    assert zero in results["b"] and zero in results["s"], results
    assert (project.cwd / "hook.txt").read_text().split() == ["CapEff:", zero]
