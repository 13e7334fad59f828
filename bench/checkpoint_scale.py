"""Checkpoints against the project's size and heron's own home (issue 23).

Part 1, prompt -> first request byte: one ``heron --mode rpc`` process per repository, six
turns; each turn's time runs from writing the prompt line to the moment the first request of
the turn reaches a local OpenAI-format server. Turns 1, 3 and 5 have the model run a bash
command that changes one file (so the next turn's snapshot has a change to record); turns
2, 4 and 6 only answer. Repositories: an empty one and generated git repositories of
20,000 and 100,000 files (small ones with ``--quick``), side by side in the same run, so the
ratios compare like with like: ``--rounds`` sessions in each (3 by default), the repositories
taking turns, so that a change of the machine's load falls on all alike and turns 2-6 are a
median of 15 turns each. Turn 1 is given for the first session (which makes the shadow
repository, its snapshot hashing the whole tree) and for the later ones. The launch -> first
request of a ``heron -p`` in each is there too (process start, imports, then turn 1). pi 1.6.0
(``bench/_pi.py``) runs the same six turns in the same repositories, in its own rpc mode
against the same kind of server: it takes no snapshots, so its turn 1 is what a first turn
costs without them (pi's columns say "pi: not installed" where it is missing).

Part 2, ``heron -p`` whole-run time, 8 runs in a row (``-c`` after the first, each run one
bash call that writes a file), with heron's home outside the project and inside it; after
each run the size and file count of ``$HERON_HOME/checkpoints``. Both must be flat.

At the end the goals of issue 23 are worked out from the figures and printed, each as met or
not: turns 2-6 within 1.5x of the empty repository's and within 50 ms, every first turn
within 1,000 ms, and the home inside the project flat (``repository_goals``, ``home_goal``).

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
# issue 23's goals, checked against the figures (repository_goals, home_goal)
TURNS_RATIO = 1.5  # turns 2-6 in a large repository vs an empty one
TURNS_MS = 50.0
FIRST_TURN_MS = 1_000.0
FLAT_RATIO = 1.5  # home inside the project: store and time per run


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
        t1, later, rest, pi = (
            data["turn_1_ms"],
            data["later_turn_1_ms"],
            data["turns_2_6_median_ms"],
            data["pi_turn_ms"],
        )
        rows.append(
            [
                f"{int(files):,}" if files != "0" else "empty",
                f"{t1:.0f}",
                "-" if later is None else f"{later:.0f}",
                f"{t1 / empty['turn_1_ms']:.2f}x",
                NOT_INSTALLED if pi is None else f"{median([t[0] for t in pi]):.0f}",
                f"{rest:.1f}",
                f"{rest / empty['turns_2_6_median_ms']:.2f}x",
                "-" if pi is None else f"{median([x for t in pi for x in t[1:]]):.0f}",
                f"{data['launch_to_request_ms']:.0f}",
                f"{data['snapshots']} of {data['snapshots_expected']}",
            ]
        )
    headers = ["files", "turn 1 ms (new store)", "turn 1 ms (later sessions)", "vs empty", "pi turn 1 ms"]
    headers += ["turns 2-6 median ms", "vs empty", "pi turns 2-6 ms", "-p launch -> request ms", "snapshots"]
    return table(headers, rows)


def repository_goals(repositories: dict[str, Any]) -> list[str]:
    """Issue 23's goals, worked out from the figures: turns 2-6 within 1.5x of the empty
    repository's and within 50 ms; every first turn of a session within 1,000 ms."""
    empty = repositories["0"]["turns_2_6_median_ms"]
    lines = []
    for files, data in repositories.items():
        name = "empty" if files == "0" else f"{int(files):,} files"
        rest = data["turns_2_6_median_ms"]
        if files != "0":
            ratio = rest / empty
            met = ratio <= TURNS_RATIO and rest <= TURNS_MS
            lines.append(
                f"{name}: turns 2-6 {rest:.1f} ms, {ratio:.2f}x the empty repository's "
                f"(goal <= {TURNS_RATIO}x and <= {TURNS_MS:.0f} ms): {verdict(met)}"
            )
        first = [t[0] for t in data["heron_turn_ms"]]
        lines.append(
            f"{name}: first turn of each session {' '.join(f'{t:.0f}' for t in first)} ms "
            f"(goal <= {FIRST_TURN_MS:,.0f} ms): {verdict(max(first) <= FIRST_TURN_MS)}"
        )
    return lines


def home_goal(home: dict[str, list[dict[str, float]]]) -> str:
    """Flat with the home inside the project: its store ends within 1.5x of the store with the
    home outside (the same snapshots of the same project; heron's own files would add to it),
    and the later half of the runs take within 1.5x of the first half."""
    inside, outside = home["inside"], home["outside"]
    store_ratio = inside[-1]["store_bytes"] / max(1, outside[-1]["store_bytes"])
    seconds = [r["seconds"] for r in inside]
    half = max(1, len(seconds) // 2)
    time_ratio = median(seconds[-half:]) / median(seconds[:half])
    met = store_ratio <= FLAT_RATIO and time_ratio <= FLAT_RATIO
    return (
        f"home inside the project: store {store_ratio:.2f}x the home-outside one's, the later half of the runs "
        f"{time_ratio:.2f}x the first half (median seconds; goal: both <= {FLAT_RATIO}x): {verdict(met)}"
    )


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def measure_repositories(work: Path, sizes: list[int], rounds: int) -> dict[str, Any]:
    """All repositories made first, then ``rounds`` sessions in each, taking turns (empty,
    then each size, then again), so a change in the machine's load falls on all of them alike.
    One heron home per repository: the first session makes its shadow repository (turn 1
    then snapshots the whole tree), the later ones find it."""
    generated: dict[int, float] = {}
    for files in [0, *sizes]:
        started = time.perf_counter()
        generate(work / f"repo-{files}", files)
        generated[files] = time.perf_counter() - started
    heron: dict[int, list[list[float]]] = {files: [] for files in generated}
    pi: dict[int, list[list[float]]] = {files: [] for files in generated}
    for _ in range(rounds):
        for files in generated:
            cwd = work / f"repo-{files}"
            heron[files].append(turn_latencies(cwd, work / f"home-{files}"))
            if pi_command():
                pi[files].append(turn_latencies(cwd, work / f"pi-{files}", pi=True))
    out: dict[str, Any] = {}
    for files in generated:
        cwd, home = work / f"repo-{files}", work / f"home-{files}"
        launch = launch_to_request(cwd, home)
        turns = heron[files]
        out[str(files)] = {
            "heron_turn_ms": [[round(t, 1) for t in session] for session in turns],
            "pi_turn_ms": [[round(t, 1) for t in session] for session in pi[files]] or None,
            "turn_1_ms": round(turns[0][0], 1),
            "later_turn_1_ms": round(median([t[0] for t in turns[1:]]), 1) if len(turns) > 1 else None,
            "turns_2_6_median_ms": round(median([x for session in turns for x in session[1:]]), 1),
            "launch_to_request_ms": round(launch, 1),
            "generate_s": round(generated[files], 1),
            "store": store_size(home),
            "snapshots": snapshots(home),
            # six before each session's turns, three after its writing turns, one for the -p run
            "snapshots_expected": rounds * (TURNS + (TURNS + 1) // 2) + 1,
        }
        shutil.rmtree(cwd, ignore_errors=True)
    return out


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--sizes", default=None, help="comma-separated file counts (default 20000,100000; quick: 500)")
    p.add_argument("--rounds", type=int, default=None, help="sessions per repository (default 3; quick: 1)")
    args = p.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else ([500] if args.quick else [20_000, 100_000])
    rounds = args.rounds or (1 if args.quick else 3)
    runs = 3 if args.quick else 8
    if shutil.which("git") is None:
        raise SystemExit("this benchmark needs the git command (to make the repositories)")
    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="heron-ckpt-"))
    results: dict[str, Any] = {"rounds": rounds, "repositories": {}, "home": {}}
    try:
        results["repositories"] = measure_repositories(work, sizes, rounds)
        load_middle = load_average()
        for inside in (False, True):
            results["home"]["inside" if inside else "outside"] = home_runs(work, inside, runs)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = load_average()
    print(repository_table(results["repositories"]))
    print(f"{rounds} session(s) per repository; load average: {load_before} at the start, {load_middle} at the end")
    home_rows = []
    for where, series in results["home"].items():
        home_rows.append(
            [
                f"home {where}",
                " ".join(f"{r['seconds']:.2f}" for r in series),
                f"{series[0]['store_bytes'] / 1e6:.3f} -> {series[-1]['store_bytes'] / 1e6:.3f} MB",
                f"{series[0]['store_files']} -> {series[-1]['store_files']}",
            ]
        )
    print(table(["heron -p, runs in a row", "seconds per run", "checkpoint store", "store files"], home_rows))
    print(f"load average: {load_middle} at the start, {load_after} at the end")
    goals = [*repository_goals(results["repositories"]), home_goal(results["home"])]
    print("\n".join(["goals (issue 23):", *(f"- {line}" for line in goals)]))
    data = {"load": [load_before, load_middle, load_after], "goals": goals, **results}
    path = write_json("checkpoint_scale", data, args.json, args.quick)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
