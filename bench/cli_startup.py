"""Start-up time of the ``heron`` command, next to the interpreter's own.

Rows (median of 10 fresh processes each, 3 with ``--quick``; one warm-up run first so
byte-code caches exist):

- ``python -c pass``: the floor, process start to exit.
- ``heron --version``: process start to exit (target: under 150 ms).
- ``heron -p`` to the first request byte: from just before ``Popen`` to the moment the
  first HTTP request reaches a local server, which records its arrival. Twice: an
  OpenAI-compatible server (``--base-url``; target 200 ms) and an Anthropic-format one
  (a ``models.json`` provider; target 250 ms).
- heron modules left without a current byte-code cache after a ``-p`` run (0: heron
  does not recompile itself on the next start, even with ``PYTHONDONTWRITEBYTECODE=1``).
- ``python -c "import heron.cli.app, heron.coding.runtime"``: heron's own modules for a
  ``-p`` run, without any provider SDK.
- ``python -c "import openai"`` / ``"import anthropic"``: the SDK import alone, to show
  how much of the ``-p`` figure is not heron's.

The load average is recorded with the results: on a shared machine it explains most of
the spread between runs.
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
    # PYTHONDONTWRITEBYTECODE is kept as the machine sets it (here: 1): heron must not
    # recompile its own modules on every start even then (heron/cli/bytecode.py).
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
    env["HERON_HOME"] = str(home)
    return env


def wall_ms(command: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
    return (time.perf_counter() - start) * 1000


def first_request_ms(command: list[str], env: dict[str, str], cwd: Path, server: TimedServer, reply: bytes) -> float:
    """Start heron, wait for its first request, answer it, and wait for heron to exit."""
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
    if process.returncode != 0 or not server.arrivals:
        raise RuntimeError(f"heron failed ({process.returncode}): {err.strip()[-2000:]}")
    return (server.arrivals[0] - start) * 1000


def stale_heron_modules(command: list[str], env: dict[str, str], cwd: Path, server: TimedServer) -> int:
    """How many of the heron modules a ``-p`` run imports still lack a current cache after it."""
    probe = (
        "import runpy, sys, json, importlib.util, os\n"
        "sys.argv = ['heron', *json.loads(os.environ['HERON_PROBE_ARGS'])]\n"
        "try:\n    runpy.run_module('heron.cli.main', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "from heron.cli.bytecode import is_current\n"
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


def measure(runs: int, fn: Any) -> list[float]:
    fn()  # warm-up: byte-code caches, page cache
    return [fn() for _ in range(runs)]


def main() -> None:
    args = parser(__doc__ or "").parse_args()
    runs = 3 if args.quick else 10
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
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
                measure(runs, lambda: first_request_ms(openai_p, env, cwd, openai_server, openai_turn("ok"))),
                TARGET_OPENAI_MS,
            ),
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
    finally:
        openai_server.close()
        anthropic_server.close()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
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
    print(
        f"heron modules without a current byte-code cache after a -p run: {stale}"
        f" (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
    )
    data = {
        "runs": runs,
        "load_average": [load_before, load_after],
        "results": results,
        "stale_bytecode_modules": stale,
    }
    print(json.dumps(data))
    write_json("cli_startup", data, args.json, args.quick)


if __name__ == "__main__":
    main()
