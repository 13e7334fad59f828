"""``heron batch --executor ray`` end to end, on a small local Ray cluster started by
heron itself (127.0.0.1 only). Skipped when the ``ray`` extra is not installed; CI
installs it."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.batch.support import (
    ScriptedServer,
    batch_args,
    batch_env,
    make_project,
    read_results,
    run_batch,
    write_tasks,
)
from tests.batch.test_local_e2e import interrupt_and_resume
from tests.support.http_server import Recorded

pytest.importorskip("ray")


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    scripted = ScriptedServer()
    yield scripted
    scripted.close()


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: the children of the children...)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def batch_workers(pid: int) -> list[int]:
    workers = []
    for child in descendants(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if b"BatchWorker" in command:
            workers.append(child)
    return workers


def test_fifty_tasks_on_ray_with_a_worker_killed_mid_run(tmp_path: Path, server: ScriptedServer) -> None:
    """50 tasks, --workers 2: one actor process is SIGKILLed at the 30th model request;
    its running tasks are retried on the replacement and no task is lost."""
    project = make_project(tmp_path)
    ids = write_tasks(tmp_path / "tasks.jsonl", project, 50)
    args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server, "--executor", "ray", "--workers", "2")
    process = subprocess.Popen(
        args,
        env=batch_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    killed: list[int] = []

    def kill_one(request: Recorded, count: int) -> None:
        if count == 30 and not killed:
            workers = batch_workers(process.pid)
            assert workers, "no BatchWorker process found"
            killed.append(workers[0])
            os.kill(workers[0], signal.SIGKILL)
            time.sleep(0.5)  # the reply to the dead process's request goes nowhere

    server.on_request = kill_one
    try:
        _, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert killed, "the kill never happened"
    results = read_results(tmp_path / "out")
    assert sorted(r["id"] for r in results) == ids
    assert all(r["status"] == "ok" for r in results), [r for r in results if r["status"] != "ok"]
    retried = [r for r in results if r["attempts"] == 2]
    assert retried, "no task was retried after the kill"
    assert "its worker died, trying again" in err

    started = time.monotonic()
    again = run_batch(args, batch_env(tmp_path), tmp_path)
    assert again.returncode == 0 and "nothing to do" in again.stderr
    assert "Ray" not in again.stderr and time.monotonic() - started < 20  # Ray was not started


def test_ctrl_c_on_ray_and_the_rerun_runs_only_the_unfinished(tmp_path: Path, server: ScriptedServer) -> None:
    interrupt_and_resume(tmp_path, server, "--executor", "ray")


def test_a_task_that_kills_its_worker_every_time_ends_as_an_error(tmp_path: Path, server: ScriptedServer) -> None:
    """--retries 1: the first attempt and one retry die, then the task is an error."""
    project = make_project(tmp_path)
    write_tasks(tmp_path / "tasks.jsonl", project, 1)
    args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server, "--executor", "ray", "--workers", "1")
    process = subprocess.Popen(
        args,
        env=batch_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )

    def kill_all(request: Recorded, count: int) -> None:
        for worker in batch_workers(process.pid):
            os.kill(worker, signal.SIGKILL)
        time.sleep(0.5)

    server.on_request = kill_all
    try:
        _, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err
    (result,) = read_results(tmp_path / "out")
    assert result["status"] == "error" and result["attempts"] == 2
    assert "worker running it died (2 attempt(s))" in result["error"]


def socket_peers(pids: list[int]) -> set[str]:
    """The addresses (local and remote, as /proc/net/tcp* spells them) of every TCP
    socket that one of ``pids`` holds."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    target = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
        except OSError:
            continue
    addresses: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[9] in inodes and fields[3] != "0A":  # not LISTEN
                    addresses.update(field.split(":")[0] for field in fields[1:3])
    return addresses


LOOPBACK = {"0100007F", "00000000000000000000000001000000", "0000000000000000FFFF00000100007F"}


def test_the_local_cluster_talks_over_loopback_only(tmp_path: Path, server: ScriptedServer) -> None:
    """Ray's own processes (driver, GCS, raylet, actors) connect to 127.0.0.1 only."""
    project = make_project(tmp_path)
    write_tasks(tmp_path / "tasks.jsonl", project, 10)
    args = batch_args(tmp_path / "tasks.jsonl", tmp_path / "out", server, "--executor", "ray", "--workers", "2")
    process = subprocess.Popen(
        args,
        env=batch_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    seen: set[str] = set()

    def look(request: Recorded, count: int) -> None:
        if count == 5:
            seen.update(socket_peers([process.pid, *descendants(process.pid)]))

    server.on_request = look
    try:
        _, err = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert seen and seen <= LOOPBACK, seen


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_batch_otel_console_prints_every_span(tmp_path: Path, server: ScriptedServer, executor: str) -> None:
    """Each task's spans reach the output, from the actors too (forwarded by Ray)."""
    pytest.importorskip("opentelemetry.sdk")
    project = make_project(tmp_path)
    write_tasks(tmp_path / "tasks.jsonl", project, 3)
    args = batch_args(
        tmp_path / "tasks.jsonl",
        tmp_path / "out",
        server,
        "--executor",
        executor,
        "--workers",
        "2",
        "--otel",
        "console",
    )
    done = run_batch(args, batch_env(tmp_path), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count('"name": "invoke_agent heron"') == 3
    assert done.stderr.count('"name": "chat test-model"') == 6
    assert done.stderr.count('"name": "execute_tool read"') == 3


def test_a_cluster_address_that_refuses_is_a_clear_error_at_once(tmp_path: Path, server: ScriptedServer) -> None:
    project = make_project(tmp_path)
    write_tasks(tmp_path / "tasks.jsonl", project, 1)
    args = batch_args(
        tmp_path / "tasks.jsonl", tmp_path / "out", server, "--executor", "ray", "--ray-address", "127.0.0.1:1"
    )  # nothing listens on port 1
    done = run_batch(args, batch_env(tmp_path), tmp_path, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "could not join the Ray cluster at 127.0.0.1:1" in done.stderr
    assert read_results(tmp_path / "out") == [] and not server.times
