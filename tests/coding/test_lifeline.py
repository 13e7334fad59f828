"""Tool children die with heron and what they started is reaped at the next start, without
the sandbox (``--sandbox off``); a ``setsid`` daemon holding a command's output is killed for
real and reported as such (docs/permissions.md, "Processes")."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from heron.ai.abort import AbortSignal
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.lifeline import MARK, mark_call, owner, reap_leftovers
from heron.coding.tools.params import BashParams
from tests.cli.test_print_json_e2e import Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]


def pids_of(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def signal_state(pid: int) -> str:
    """How a process stands towards signals (``/proc``): why one that was sent a signal has
    not died - blocked or ignored (inherited from whoever started it), or stuck in the
    kernel - said in the failure instead of a bare timeout."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError as exc:
        return f"no /proc/{pid}/status: {exc}"
    return "; ".join(line for line in lines if line.split(":")[0] in ("State", "SigBlk", "SigIgn", "SigCgt"))


def default_signals() -> None:
    """heron's start as a user's shell gives it: the signals these tests send take their
    default action unless heron itself handles them, whatever the test runner inherited."""
    sent = {signal.SIGTERM, signal.SIGHUP, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, sent)
    for sig in sent:
        signal.signal(sig, signal.SIG_DFL)


def wait_for(check, timeout: float = 20.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_a_setsid_daemon_holding_the_output_is_killed_and_said_so(tmp_path: Path) -> None:
    env = ToolEnv(cwd=tmp_path, home=tmp_path / "home")
    tool = BashTool(env, pipe_grace=0.3, kill_grace=0.5)
    command = "setsid sleep 3917 & echo started"
    result = asyncio.run(tool.execute("c", BashParams(command=command, timeout=20), AbortSignal(), lambda _: None))
    text = result.content[0].text  # type: ignore[union-attr]
    details = dict(result.details or {})
    assert details.get("escaped_pids") and "which had left its process group" in text, text
    assert not pids_of("sleep 3917")  # really gone, not only reported so
    assert details.get("left_running") == []


def test_reaping_kills_only_the_calls_a_dead_heron_never_finished(tmp_path: Path) -> None:
    """A dead heron's call whose file is still there (it never returned) is reaped; a
    process marked by one of its calls that returned (no file) is the user's and stays."""
    home = tmp_path / "home"
    (home / "processes").mkdir(parents=True)
    dead = "999999999:12345"  # no such process
    (home / "processes" / f"{dead}:3".replace(":", "-")).touch()  # call 3 was running
    running = subprocess.Popen(["sleep", "3914"], env={**os.environ, MARK: f"{dead}:3"}, start_new_session=True)
    returned = subprocess.Popen(["sleep", "3915"], env={**os.environ, MARK: f"{dead}:2"}, start_new_session=True)
    try:
        assert wait_for(lambda: pids_of("sleep 3914") and pids_of("sleep 3915"))
        assert reap_leftovers(home) == [running.pid]
        assert running.wait(5) == -signal.SIGKILL and returned.poll() is None
        assert list((home / "processes").iterdir()) == []
    finally:
        for proc in (running, returned):
            proc.kill()
            proc.wait()


def test_a_call_that_returned_leaves_no_file_and_its_file_is_private(tmp_path: Path) -> None:
    home = tmp_path / "home"
    mark = mark_call({}, home)
    assert mark.path is not None and mark.path.parent == home / "processes"
    assert mark.env[MARK] == mark.path.name.replace("-", ":") and mark.env[MARK].startswith(owner() + ":")
    assert oct(mark.path.stat().st_mode & 0o777) == oct(0o600)
    assert oct(mark.path.parent.stat().st_mode & 0o777) == oct(0o700)
    assert mark_call({}, home).env[MARK] != mark.env[MARK]  # each call its own mark
    path = mark.path
    mark.release()
    assert not path.exists() and mark.path is None


def test_reaping_an_older_herons_file_kills_what_it_marked(tmp_path: Path) -> None:
    """A file of a heron before per-call marks (``<pid>-<start>``): read as before."""
    home = tmp_path / "home"
    (home / "processes").mkdir(parents=True)
    dead = "999999999:12345"  # no such process
    (home / "processes" / dead.replace(":", "-")).touch()
    ours = subprocess.Popen(["sleep", "3918"], env={**os.environ, MARK: dead}, start_new_session=True)
    other = subprocess.Popen(["sleep", "3919"], env={**os.environ, MARK: owner()}, start_new_session=True)
    try:
        assert wait_for(lambda: pids_of("sleep 3918") and pids_of("sleep 3919"))
        (home / "processes" / owner().replace(":", "-")).touch()  # a live heron's file stays
        (home / "processes" / "not-a-heron").touch()  # a file that names no heron: left alone
        assert reap_leftovers(home) == [ours.pid]
        assert ours.wait(5) == -signal.SIGKILL and other.poll() is None
        assert sorted(p.name for p in (home / "processes").iterdir()) == sorted(
            [owner().replace(":", "-"), "not-a-heron"]
        )
        assert reap_leftovers(home) == []  # nothing left to do: a directory listing
        assert reap_leftovers(tmp_path / "no-home") == []
    finally:
        for proc in (ours, other):
            proc.kill()
            proc.wait()


def test_kill_9_mid_tool_children_die_and_leftovers_are_reaped_next_start(
    project: Project, local_server: LocalServer
) -> None:
    command = "sleep 3921 & setsid sleep 3922 >/dev/null 2>&1 & sleep 3923"
    local_server.queue(openai_reply("", [("c1", "bash", {"command": command})]), openai_reply("never"))
    proc = subprocess.Popen(
        [*heron_command(), *openai_args(local_server), "--sandbox", "off", "-p", "go"],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert wait_for(lambda: all(pids_of(f"sleep {n}") for n in (3921, 3922, 3923)))
        proc.kill()
        proc.wait(10)
        # the command's own process (the shell) dies with heron (PR_SET_PDEATHSIG)
        assert wait_for(lambda: not pids_of("& setsid sleep 3922"), 5)
        # what it started lives on until the next start
        assert pids_of("sleep 3921") and pids_of("sleep 3922") and pids_of("sleep 3923")
        assert list((project.home / "processes").iterdir())
        local_server.queue(openai_reply("done"))
        result = project.run(*openai_args(local_server), "--sandbox", "off", "-p", "again")
        assert result.code == 0, result.err
        assert wait_for(lambda: not any(pids_of(f"sleep {n}") for n in (3921, 3922, 3923)), 5)
        assert list((project.home / "processes").iterdir()) == []  # a normal exit leaves no file
    finally:
        if proc.poll() is None:
            proc.kill()
        for n in (3921, 3922, 3923):
            for pid in pids_of(f"sleep {n}"):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT], ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_detached_server_outlives_heron_and_the_next_start(
    project: Project, local_server: LocalServer, sig: signal.Signals
) -> None:
    """issue 37: the user's ``nohup`` server, started by a bash call that returned, is
    never reaped, however heron ended (no terminal, sandbox off); what a call that was
    still running when heron died started is reaped at the next start."""
    server = "nohup sleep 3931 >/dev/null 2>&1 & echo started"
    busy = "sleep 3932 & sleep 3933"
    local_server.queue(
        openai_reply("", [("c1", "bash", {"command": server})]),
        openai_reply("", [("c2", "bash", {"command": busy})]),
        openai_reply("never"),
    )
    proc = subprocess.Popen(
        [*heron_command(), *openai_args(local_server), "--sandbox", "off", "-p", "start the server"],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=default_signals,
    )
    try:
        assert wait_for(lambda: pids_of("sleep 3931") and pids_of("sleep 3933"), 60)
        kept = pids_of("sleep 3931")
        proc.send_signal(sig)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"heron outlived {sig.name} by 30 s: {signal_state(proc.pid)}")
        local_server.queue(openai_reply("done"))
        result = project.run(*openai_args(local_server), "--sandbox", "off", "-p", "again")
        assert result.code == 0, result.err
        assert wait_for(lambda: not pids_of("sleep 3932") and not pids_of("sleep 3933"), 10)
        assert pids_of("sleep 3931") == kept  # the server the user asked for: alive
        assert list((project.home / "processes").iterdir()) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        for n in (3931, 3932, 3933):
            for pid in pids_of(f"sleep {n}"):
                os.kill(pid, signal.SIGKILL)
