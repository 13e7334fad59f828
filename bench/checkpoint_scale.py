"""Checkpoints against the project's size and heron's own home (issue 23).

Part 1, prompt -> first request byte: one ``heron --mode rpc`` process per repository, six
turns; each turn's time runs from writing the prompt line to the moment the first request of
the turn reaches a local OpenAI-format server. Turns 1, 3 and 5 have the model run a bash
command that changes one file (so the next turn's snapshot has a change to record); turns
2, 4 and 6 only answer. Repositories: an empty one and generated git repositories of
20,000 and 100,000 files (small ones with ``--quick``), side by side in the same run, so the
ratios compare like with like. The launch -> first request of a ``heron -p`` in each is there
too (process start, imports, then turn 1). pi 1.6.0 (``bench/_pi.py``) runs the same six turns
in the same repositories, in its own rpc mode against the same kind of server: it takes no
snapshots, so its turn 1 is what a first turn costs without them (pi's columns say "pi: not
installed" where it is missing).

Part 2, ``heron -p`` whole-run time, 8 runs in a row (``-c`` after the first, each run one
bash call that writes a file), with heron's home outside the project and inside it; after
each run the size and file count of ``$HERON_HOME/checkpoints``. Both must be flat.

The load average is recorded with the results: on a shared machine it explains most of the
spread between runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import openai_turn

from _common import median, parser, table, write_json
from _pi import NOT_INSTALLED, pi_command, pi_env, pi_model

TIMEOUT = 600
TURNS = 6


class TimedServer(LocalServer):
    """Answers from a queue and notes when each request arrived (``time.perf_counter``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    def _record(self, request: Recorded) -> None:
        self.arrivals.append(time.perf_counter())
        super()._record(request)


def heron_command() -> list[str]:
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron.cli.main"]


def clean_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return env


def git(cwd: Path, *args: str) -> None:
    ident = ["-c", "user.name=bench", "-c", "user.email=bench@localhost", "-c", "gc.auto=0"]
    subprocess.run(["git", *ident, *args], cwd=cwd, check=True, capture_output=True, timeout=TIMEOUT)


def generate(cwd: Path, files: int) -> None:
    """``files`` small source files, 100 per directory, committed in a git repository."""
    cwd.mkdir(parents=True)
    for n in range(files):
        folder = cwd / "src" / f"d{n // 100:04d}"
        if n % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"m{n:06d}.py").write_text(f"VALUE = {n}\n# {'x' * (n % 200)}\n")
    (cwd / "README.md").write_text("generated\n")
    git(cwd, "init", "-q")
    git(cwd, "add", "-A")
    git(cwd, "commit", "-qm", "generated")


def bash_call(n: int) -> tuple[str, str, dict[str, Any]]:
    return (f"c{n}", "bash", {"command": f"echo turn{n} >> README.md"})


class Rpc:
    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.child = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.ids = 0

    def send(self, payload: dict[str, Any], until: str) -> float:
        """Write one command; read events until one of type ``until`` answers it. Returns
        the ``perf_counter`` time just before the command was written."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.ids += 1
        ident = f"b{self.ids}"
        line = json.dumps({"id": ident, **payload}) + "\n"
        start = time.perf_counter()
        self.child.stdin.write(line)
        self.child.stdin.flush()
        for raw in self.child.stdout:
            event = json.loads(raw)
            if event.get("type") == "response" and event.get("id") == ident and not event.get("success", True):
                raise RuntimeError(f"rpc command failed: {event}")
            if event.get("type") == until and event.get("id", ident) == ident:
                return start
        raise RuntimeError(f"rpc ended: {self.child.stderr.read() if self.child.stderr else ''}")

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        self.child.wait(timeout=TIMEOUT)


def turn_latencies(cwd: Path, home: Path, pi: bool = False) -> list[float]:
    """Prompt -> first request (ms) of each of the six turns in one rpc process (heron's, or
    pi's with ``pi``; ``home`` is then pi's agent directory)."""
    server = TimedServer()
    try:
        if pi:
            command = [*(pi_command() or []), "--mode", "rpc", "--model", pi_model()]
            rpc, done = Rpc(command, cwd, pi_env(home, server.url + "/v1")), "agent_settled"
        else:
            command = [*heron_command(), "--base-url", server.url + "/v1", "--model", "bench-model", "--mode", "rpc"]
            rpc, done = Rpc(command, cwd, clean_env(home)), "run_end"
        rpc.send({"type": "get_state"}, "response")  # started and idle: the clock starts at the prompt
        out = []
        for n in range(1, TURNS + 1):
            if n % 2:
                server.queue(Reply(body=openai_turn("", [bash_call(n)])), Reply(body=openai_turn(f"done {n}")))
            else:
                server.queue(Reply(body=openai_turn(f"answer {n}")))
            before = len(server.arrivals)
            start = rpc.send({"type": "prompt", "message": f"turn {n}"}, done)
            out.append((server.arrivals[before] - start) * 1000)
        rpc.close()
        return out
    finally:
        server.close()


def launch_to_request(cwd: Path, home: Path) -> float:
    """``heron -p`` in a new session: process start -> first request byte (ms)."""
    server = TimedServer()
    try:
        server.queue(Reply(body=openai_turn("ok")))
        start = time.perf_counter()
        done = subprocess.run(
            [*heron_command(), "--base-url", server.url + "/v1", "--model", "bench-model", "-p", "say ok"],
            cwd=cwd,
            env=clean_env(home),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        if done.returncode != 0 or not server.arrivals:
            raise RuntimeError(f"heron -p failed: {done.stderr[-2000:]}")
        return (server.arrivals[0] - start) * 1000
    finally:
        server.close()


def snapshots(home: Path) -> int:
    """How many snapshots the project's shadow repository holds (a failed one leaves none)."""
    count = 0
    for repo in (home / "checkpoints").glob("*/HEAD"):
        out = subprocess.run(
            ["git", "--git-dir", str(repo.parent), "for-each-ref", "refs/heron/snapshots/"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        ).stdout
        count += len(out.splitlines())
    return count


def store_size(home: Path) -> tuple[int, int]:
    """(bytes, files) under ``$HERON_HOME/checkpoints``."""
    size = count = 0
    for path in (home / "checkpoints").rglob("*"):
        if path.is_file():
            size += path.stat().st_size
            count += 1
    return size, count


def home_runs(work: Path, inside: bool, runs: int) -> list[dict[str, float]]:
    """``runs`` ``heron -p`` runs in a row in a small project, home inside it or not."""
    project = work / ("home-inside" if inside else "home-outside")
    generate(project, 200)
    home = project / ".heron-home" if inside else work / "home-outside-home"
    server = TimedServer()
    out = []
    try:
        for n in range(runs):
            server.queue(Reply(body=openai_turn("", [bash_call(n)])), Reply(body=openai_turn("done")))
            start = time.perf_counter()
            done = subprocess.run(
                [*heron_command(), "--base-url", server.url + "/v1", "--model", "bench-model"]
                + (["-c"] if n else [])
                + ["-p", f"run {n + 1}"],
                cwd=project,
                env=clean_env(home),
                capture_output=True,
                text=True,
                timeout=TIMEOUT,
            )
            took = time.perf_counter() - start
            if done.returncode != 0:
                raise RuntimeError(f"heron -p failed: {done.stderr[-2000:]}")
            size, count = store_size(home)
            out.append({"seconds": round(took, 3), "store_bytes": size, "store_files": count})
    finally:
        server.close()
    return out


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages (``os.getloadavg``) and the CPU count."""
    if not hasattr(os, "getloadavg"):
        return "unknown"
    return " ".join(f"{x:.2f}" for x in os.getloadavg()) + f" ({os.cpu_count()} CPUs)"


def repository_table(repositories: dict[str, Any]) -> str:
    """Turn 1 and turns 2-6 per repository, each against the empty repository's and pi's."""
    empty = repositories["0"]
    rows = []
    for files, data in repositories.items():
        t1, rest, pi = data["turn_ms"][0], data["turns_2_6_median_ms"], data["pi_turn_ms"]
        rows.append(
            [
                f"{int(files):,}" if files != "0" else "empty",
                f"{t1:.0f}",
                f"{t1 / empty['turn_ms'][0]:.2f}x",
                NOT_INSTALLED if pi is None else f"{pi[0]:.0f}",
                "-" if pi is None else f"{t1 / pi[0]:.2f}x",
                f"{rest:.0f}",
                f"{rest / empty['turns_2_6_median_ms']:.2f}x",
                "-" if pi is None else f"{median(pi[1:]):.0f}",
                f"{data['launch_to_request_ms']:.0f}",
                str(data["snapshots"]),
            ]
        )
    headers = ["files", "turn 1 ms", "vs empty", "pi turn 1 ms", "heron / pi", "turns 2-6 median ms", "vs empty"]
    return table([*headers, "pi turns 2-6 ms", "-p launch -> request ms", "snapshots"], rows)


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--sizes", default=None, help="comma-separated file counts (default 20000,100000; quick: 500)")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([500] if args.quick else [20_000, 100_000])
    runs = 3 if args.quick else 8
    if shutil.which("git") is None:
        raise SystemExit("this benchmark needs the git command (to make the repositories)")
    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="heron-ckpt-"))
    results: dict[str, Any] = {"repositories": {}, "home": {}}
    try:
        for files in [0, *sizes]:
            cwd = work / f"repo-{files}"
            started = time.perf_counter()
            generate(cwd, files)
            generated = time.perf_counter() - started
            home = work / f"home-{files}"
            turns = turn_latencies(cwd, home)
            launch = launch_to_request(cwd, home)
            pi_turns = turn_latencies(cwd, work / f"pi-{files}", pi=True) if pi_command() else None
            results["repositories"][str(files)] = {
                "turn_ms": [round(t, 1) for t in turns],
                "pi_turn_ms": None if pi_turns is None else [round(t, 1) for t in pi_turns],
                "turns_2_6_median_ms": round(median(turns[1:]), 1),
                "launch_to_request_ms": round(launch, 1),
                "generate_s": round(generated, 1),
                "store": store_size(home),
                "snapshots": snapshots(home),
            }
            shutil.rmtree(cwd, ignore_errors=True)
        load_middle = load_average()
        for inside in (False, True):
            results["home"]["inside" if inside else "outside"] = home_runs(work, inside, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = load_average()
    print(repository_table(results["repositories"]))
    print(f"load average: {load_before} at the start, {load_middle} at the end")
    home_rows = []
    for where, series in results["home"].items():
        home_rows.append(
            [
                f"home {where}",
                " ".join(f"{r['seconds']:.2f}" for r in series),
                f"{series[0]['store_bytes'] / 1e6:.2f} -> {series[-1]['store_bytes'] / 1e6:.2f} MB",
                f"{series[0]['store_files']} -> {series[-1]['store_files']}",
            ]
        )
    print(table(["heron -p, runs in a row", "seconds per run", "checkpoint store", "store files"], home_rows))
    print(f"load average: {load_middle} at the start, {load_after} at the end")
    data = {"load": [load_before, load_middle, load_after], **results}
    path = write_json("checkpoint_scale", data, args.json, args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
