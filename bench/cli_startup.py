"""Start-up time of the ``heron`` command, next to the interpreter's own.

Rows (median of 10 fresh processes each, 3 with ``--quick``; one warm-up run first so
byte-code caches exist):

- ``python -c pass``: the floor, process start to exit.
- ``heron --version``: process start to exit (target: under 150 ms).
- ``heron -p`` to the first request byte: from just before ``Popen`` to the moment the
  first HTTP request reaches a local server, which records its arrival. Twice: an
  OpenAI-compatible server (``--base-url``; target 200 ms) and an Anthropic-format one
  (a ``models.json`` provider; target 250 ms).
- The floor under those two: the smallest program on heron's HTTP stack (``asyncio`` and
  ``httpx``, nothing of heron) streaming one request to the same server, launch -> first
  request byte; its runs alternate with heron's OpenAI-compatible ones. Whatever heron
  does, it cannot start faster than this.
- heron modules left without a current byte-code cache after a ``-p`` run (0: heron
  does not recompile itself on the next start, even with ``PYTHONDONTWRITEBYTECODE=1``).
- ``python -c "import heron.cli.app, heron.coding.runtime"``: heron's own modules for a
  ``-p`` run, without any provider SDK.
- ``python -c "import openai"`` / ``"import anthropic"``: the SDK import alone, to show
  what heron saves by not importing them (not with ``--quick``).

Then heron beside pi 1.6.0 (``bench/_pi.py``), as users run both: ``-p`` in a small git
project with a session file, heron's home and pi's agent directory outside it, each talking
to the same scripted server (OpenAI Chat Completions, then Anthropic Messages). heron and pi
runs alternate, so both see the same load; each run gives two figures, launch -> first
request byte and the whole run to exit, with the median of each and heron / pi (goal: at
most 1.0). Without pi installed, its columns say so.

The load average is printed at the start and the end of each table: on a shared machine it
explains most of the spread between runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sse import anthropic_turn, openai_turn

from _common import median, parser, table, write_json
from _pi import NOT_INSTALLED, pi_command, pi_env, pi_model

TARGET_VERSION_MS = 150
TARGET_OPENAI_MS = 200
TARGET_ANTHROPIC_MS = 250
TIMEOUT = 120


class TimedServer(LocalServer):
    """A LocalServer that notes when each request arrived (``time.perf_counter``)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.arrived = threading.Event()

    def _record(self, request: Recorded) -> None:
        self.arrivals.append(time.perf_counter())
        self.arrived.set()
        super()._record(request)

    def reset(self) -> None:
        self.arrivals.clear()
        self.arrived.clear()


def heron_command() -> list[str]:
    script = Path(sys.executable).with_name("heron")
    return [str(script)] if script.exists() else [sys.executable, "-m", "heron.cli.main"]


def clean_env(home: Path) -> dict[str, str]:
    # PYTHONDONTWRITEBYTECODE is kept as the machine sets it: heron respects it (heron/cli/boot.py),
    # so under it every start compiles heron's modules from source.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return env


def wall_ms(command: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
    return (time.perf_counter() - start) * 1000


def first_request_ms(command: list[str], env: dict[str, str], cwd: Path, server: TimedServer, reply: bytes) -> float:
    """Start heron, wait for its first request, answer it, and wait for heron to exit."""
    return timed_run(command, env, cwd, server, reply)[0]


def timed_run(
    command: list[str], env: dict[str, str], cwd: Path, server: TimedServer, reply: bytes
) -> tuple[float, float]:
    """(launch -> first request byte, launch -> exit) in ms of one ``-p`` run answered with ``reply``."""
    server.reset()
    server.queue(Reply(body=reply))
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        _, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    ended = time.perf_counter()
    if process.returncode != 0 or not server.arrivals:
        raise RuntimeError(f"{command[0]} failed ({process.returncode}): {err.strip()[-2000:]}")
    return (server.arrivals[0] - start) * 1000, (ended - start) * 1000


FLOOR_PROGRAM = """
import sys
sys.modules["httpx._main"] = None  # as heron's command does: httpx's own CLI is not loaded
import asyncio, httpx
async def main(url):
    async with httpx.AsyncClient() as client:
        body = {"model": "bench-model", "stream": True, "messages": [{"role": "user", "content": "say ok"}]}
        async with client.stream("POST", url, json=body) as response:
            async for _ in response.aiter_bytes():
                pass
asyncio.run(main(sys.argv[1]))
"""


def floor_and_heron(
    runs: int, heron_p: list[str], env: dict[str, str], cwd: Path, server: TimedServer
) -> tuple[list[float], list[float]]:
    """(the floor program's, heron's) launch -> first request byte, their runs alternating."""
    floor_command = [sys.executable, "-c", FLOOR_PROGRAM, server.url + "/v1/chat/completions"]
    floors, herons = [], []
    for _ in range(runs):
        floors.append(first_request_ms(floor_command, env, cwd, server, openai_turn("ok")))
        herons.append(first_request_ms(heron_p, env, cwd, server, openai_turn("ok")))
    return floors, herons


def stale_heron_modules(command: list[str], env: dict[str, str], cwd: Path, server: TimedServer) -> int:
    """How many of the heron modules a ``-p`` run imports still lack a current cache after it."""
    probe = (
        "import runpy, sys, json, importlib.util, os\n"
        "sys.argv = ['heron', *json.loads(os.environ['HERON_PROBE_ARGS'])]\n"
        "try:\n    runpy.run_module('heron.cli.main', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "def is_current(source):\n"
        "    cache = importlib.util.cache_from_source(source)\n"
        "    stat = os.stat(source)\n"
        "    mtime = (int(stat.st_mtime) & 0xFFFFFFFF).to_bytes(4, 'little')\n"
        "    size = (stat.st_size & 0xFFFFFFFF).to_bytes(4, 'little')\n"
        "    try:\n"
        "        with open(cache, 'rb') as f:\n"
        "            return f.read(16) == importlib.util.MAGIC_NUMBER + bytes(4) + mtime + size\n"
        "    except OSError:\n"
        "        return False\n"
        "files = [m.__file__ for n, m in list(sys.modules.items()) if n.split('.')[0] == 'heron' "
        "and getattr(m, '__file__', '') and m.__file__.endswith('.py')]\n"
        "print(sum(not is_current(f) for f in files))\n"
    )
    server.reset()
    server.queue(Reply(body=openai_turn("ok")))
    args = command[command.index("--no-session") :]
    run = subprocess.run(
        [sys.executable, "-c", probe],
        env={**env, "HERON_PROBE_ARGS": json.dumps(args)},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    lines = run.stdout.strip().splitlines()
    return int(lines[-1]) if lines and lines[-1].isdigit() else -1


def side_by_side(
    work: Path, home: Path, runs: int, servers: dict[str, TimedServer]
) -> dict[str, dict[str, list[tuple[float, float]] | None]]:
    """heron and pi ``-p`` on each wire, alternating run by run in one git project with a
    session: wire -> tool -> [(first request ms, exit ms)] (``None``: pi is not installed)."""
    project = work / "side-by-side"
    project.mkdir()
    (project / "main.py").write_text("print('hello')\n")
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, capture_output=True, timeout=TIMEOUT)
    heron, pi, env = heron_command(), pi_command(), clean_env(home)
    heron_model = {
        "openai": ["--base-url", servers["openai"].url + "/v1", "--model", "bench-model"],
        "anthropic": ["--model", "local-claude/claude-local"],
    }
    pi_wire = {
        "openai": ("openai-completions", "/v1", "bench-model"),
        "anthropic": ("anthropic-messages", "", "claude"),
    }
    replies = {"openai": openai_turn("ok"), "anthropic": anthropic_turn("ok")}
    out: dict[str, dict[str, list[tuple[float, float]] | None]] = {}
    for wire, server in servers.items():
        contenders = {"heron": ([*heron, *heron_model[wire], "-p", "say ok"], env)}
        if pi is not None:
            api, suffix, model_id = pi_wire[wire]
            pi_env_ = pi_env(work / f"pi-{wire}", server.url + suffix, api=api, model_id=model_id)
            contenders["pi"] = ([*pi, "--model", pi_model(model_id), "-p", "say ok"], pi_env_)
        runs_of: dict[str, list[tuple[float, float]]] = {name: [] for name in contenders}
        for n in range(runs + 1):  # the first round warms caches (and heron's window probe) up
            for name, (command, run_env) in contenders.items():
                figures = timed_run(command, run_env, project, server, replies[wire])
                if n:
                    runs_of[name].append(figures)
        out[wire] = {"heron": runs_of["heron"], "pi": runs_of.get("pi")}
    return out


def side_by_side_table(found: dict[str, dict[str, list[tuple[float, float]] | None]]) -> tuple[str, dict[str, Any]]:
    """The table (medians, heron / pi) and its figures for the JSON file."""
    rows, data = [], {}
    for index, moment, goal in (
        (0, "launch -> first request byte", "<= 200 ms quiet"),
        (1, "-p whole run", "<= 1.0x pi"),
    ):
        for wire, by_tool in found.items():
            heron_runs, pi_runs = by_tool["heron"] or [], by_tool["pi"]
            heron_ms = median([r[index] for r in heron_runs])
            pi_ms = median([r[index] for r in pi_runs]) if pi_runs else None
            key = f"{'first_request' if index == 0 else 'whole_run'}_{wire}"
            data[key] = {"heron_ms": round(heron_ms, 1), "pi_ms": None if pi_ms is None else round(pi_ms, 1)}
            rows.append(
                [
                    f"{moment}, {wire} wire",
                    f"{heron_ms:.0f}",
                    NOT_INSTALLED if pi_ms is None else f"{pi_ms:.0f}",
                    "-" if pi_ms is None else f"{heron_ms / pi_ms:.2f}x",
                    goal,
                ]
            )
    return table(["moment", "heron median ms", "pi 1.6.0 median ms", "heron / pi", "goal"], rows), data


def load_average() -> float | None:
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


def measure(runs: int, fn: Any) -> list[float]:
    fn()  # warm-up: byte-code caches, page cache
    return [fn() for _ in range(runs)]


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--runs", type=int, default=None, help="runs per row (default 10; 3 with --quick)")
    args = p.parse_args()
    runs = args.runs or (3 if args.quick else 10)
    load_before = load_average()
    work = Path(tempfile.mkdtemp(prefix="heron-startup-"))
    home, cwd = work / "home", work / "project"
    home.mkdir()
    cwd.mkdir()
    env = clean_env(home)
    heron = heron_command()
    openai_server, anthropic_server = TimedServer(), TimedServer()
    (home / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "local-claude": {
                        "baseUrl": anthropic_server.url,
                        "api": "anthropic-messages",
                        "apiKey": "sk-bench",
                        "models": [{"id": "claude-local", "contextWindow": 200000, "maxTokens": 8192}],
                    }
                }
            }
        )
    )
    openai_p = [
        *heron,
        "--no-session",
        "--base-url",
        openai_server.url + "/v1",
        "--model",
        "bench-model",
        "-p",
        "say ok",
    ]
    anthropic_p = [*heron, "--no-session", "--model", "local-claude/claude-local", "-p", "say ok"]
    try:
        first_request_ms(openai_p, env, cwd, openai_server, openai_turn("ok"))  # warm-up: caches written
        floor_openai, heron_openai = floor_and_heron(runs, openai_p, env, cwd, openai_server)
        rows_spec: list[tuple[str, str, list[float], int | None]] = [
            (
                "python_pass",
                "python -c pass",
                measure(runs, lambda: wall_ms([sys.executable, "-c", "pass"], env, cwd)),
                None,
            ),
            (
                "heron_version",
                "heron --version",
                measure(runs, lambda: wall_ms([*heron, "--version"], env, cwd)),
                TARGET_VERSION_MS,
            ),
            (
                "heron_p_openai",
                "heron -p -> first request (OpenAI-compatible)",
                heron_openai,
                TARGET_OPENAI_MS,
            ),
            ("floor_httpx", "floor: python + asyncio + httpx, one request", floor_openai, None),
            (
                "heron_p_anthropic",
                "heron -p -> first request (Anthropic)",
                measure(runs, lambda: first_request_ms(anthropic_p, env, cwd, anthropic_server, anthropic_turn("ok"))),
                TARGET_ANTHROPIC_MS,
            ),
            (
                "import_heron_cli",
                "python -c 'import heron.cli.app' (heron, no SDK)",
                measure(
                    runs,
                    lambda: wall_ms([sys.executable, "-c", "import heron.cli.app, heron.coding.runtime"], env, cwd),
                ),
                None,
            ),
        ]
        if not args.quick:  # the SDKs heron no longer imports: seconds each on a loaded machine
            rows_spec += [
                (
                    "import_openai",
                    "python -c 'import openai'",
                    measure(runs, lambda: wall_ms([sys.executable, "-c", "import openai"], env, cwd)),
                    None,
                ),
                (
                    "import_anthropic",
                    "python -c 'import anthropic'",
                    measure(runs, lambda: wall_ms([sys.executable, "-c", "import anthropic"], env, cwd)),
                    None,
                ),
            ]
        stale = stale_heron_modules(openai_p, env, cwd, openai_server)
        load_middle = load_average()
        found = side_by_side(work, home, runs, {"openai": openai_server, "anthropic": anthropic_server})
    finally:
        openai_server.close()
        anthropic_server.close()
        shutil.rmtree(work, ignore_errors=True)
    load_after = load_average()
    rows = []
    results: dict[str, Any] = {}
    for key, label, values, target in rows_spec:
        mid = median(values)
        results[key] = {
            "median_ms": round(mid, 1),
            "min_ms": round(min(values), 1),
            "max_ms": round(max(values), 1),
            "target_ms": target,
        }
        verdict = "" if target is None else ("met" if mid < target else "missed")
        rows.append([label, f"{mid:.0f}", f"{min(values):.0f}", "-" if target is None else f"< {target}", verdict])
    print(table(["command", "median ms", "min ms", "target", ""], rows))
    print(f"load average (1 min): {load_before} at the start, {load_middle} at the end ({os.cpu_count()} CPUs)")
    print(
        f"heron modules without a current byte-code cache after a -p run: {stale}"
        f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
    )
    text, pi_data = side_by_side_table(found)
    print(f"\nheron and pi 1.6.0, -p in a git project with a session, {runs} runs each, alternating:")
    print(text)
    print(f"load average (1 min): {load_middle} at the start, {load_after} at the end")
    data = {
        "runs": runs,
        "load_average": [load_before, load_middle, load_after],
        "results": results,
        "stale_bytecode_modules": stale,
        "side_by_side": pi_data,
    }
    print(json.dumps(data))
    write_json("cli_startup", data, args.json, args.quick)


if __name__ == "__main__":
    main()
