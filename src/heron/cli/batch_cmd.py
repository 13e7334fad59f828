"""``heron batch TASKS.jsonl --out DIR``: many tasks, each in its own session and copy.

Everything that can be wrong with the batch as a whole - a bad line, an unknown model, a
missing extra - is reported before any task starts (exit 2). A rerun reads DIR's
results first and, with nothing left to do, exits at once without starting Ray. See
docs/batch.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import importlib.util
import signal
import sys
from pathlib import Path

from heron.ai.models import ModelRegistry, heron_home
from heron.coding.batch.results import ResultsLog
from heron.coding.batch.runner import Job
from heron.coding.batch.tasks import BatchTask, TaskFileError, load_tasks
from heron.coding.model_choice import ResolvedModel, SetupError, resolve_model
from heron.coding.model_limits import with_limits
from heron.coding.secrets import REDACTOR
from heron.coding.settings import load_settings

EXIT_INTERRUPTED = 130
API_CHOICES = ("openai-chat", "openai-responses", "anthropic-messages", "google-gemini")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="heron batch", description="Run many tasks, each in its own session.")
    parser.add_argument("tasks", help='TASKS.jsonl: one {"id", "prompt", "cwd"} object per line')
    parser.add_argument("--out", required=True, help="output directory: results.jsonl, sessions/, work/")
    parser.add_argument("--workers", type=int, default=4, help="sessions running at once (default 4)")
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: asyncio tasks in this process; ray: async actors on a Ray cluster",
    )
    parser.add_argument("--ray-address", default=None, help="join this Ray cluster (default: start a local one)")
    parser.add_argument(
        "--retries", type=int, default=1, help="times a task whose worker died is tried again (default 1)"
    )
    parser.add_argument("--model", default=None, metavar="PROVIDER/ID", help="model of tasks that name none")
    parser.add_argument("--base-url", default=None, help="an OpenAI-compatible server")
    parser.add_argument("--api", choices=API_CHOICES, default=None, help="the wire API")
    parser.add_argument("--api-key", default=None, help="API key (default: the provider's environment variable)")
    parser.add_argument(
        "--otel",
        choices=("console",),
        default=None,
        help="print OpenTelemetry spans (OTLP is used when OTEL_EXPORTER_OTLP_ENDPOINT is set)",
    )
    parser.add_argument(
        "--progress",
        choices=("auto", "bar", "plain"),
        default="auto",
        help="a progress bar (default on a terminal) or one line per task",
    )
    return parser


class BatchError(RuntimeError):
    """The batch cannot start; exit code 2."""


def resolve_models(tasks: list[BatchTask], args: argparse.Namespace) -> dict[str | None, ResolvedModel]:
    home = heron_home()
    settings = load_settings(Path.cwd(), home)
    registry = ModelRegistry.load()
    resolved: dict[str | None, ResolvedModel] = {}
    problems: list[str] = []
    for name in sorted({task.model for task in tasks}, key=lambda n: n or ""):
        try:
            found = resolve_model(settings, registry, name or args.model, args.base_url, args.api_key, args.api)
            # a window nobody configured is asked of the server once, for every task (cached)
            resolved[name] = dataclasses.replace(found, model=with_limits(found.model, home, found.api_key))
        except SetupError as exc:
            users = [t.id for t in tasks if t.model == name][:5]
            problems.append(f"model {name or args.model or '(default)'} (tasks {', '.join(users)}): {exc}")
    if problems:
        raise BatchError("\n".join(problems))
    REDACTOR.add(m.api_key for m in resolved.values())  # the results file never holds a key (docs/permissions.md)
    return resolved


def check_arguments(args: argparse.Namespace) -> None:
    if args.workers < 1:
        raise BatchError(f"--workers {args.workers}: must be at least 1")
    if args.retries < 0:
        raise BatchError(f"--retries {args.retries}: must be 0 or more")
    if args.ray_address and args.executor != "ray":
        raise BatchError("--ray-address needs --executor ray")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise BatchError(f"--out {args.out}: exists and is not a directory")


def _tracing(args: argparse.Namespace) -> str | None:
    """The tracing mode; ``--otel`` without the packages is an error, an OTLP endpoint in
    the environment without them only a warning (the batch runs untraced)."""
    from heron.coding.tracing import missing_packages
    from heron.coding.tracing_switch import tracing_mode

    mode = tracing_mode(args.otel)
    problem = missing_packages(mode) if mode is not None else None
    if problem is None:
        return mode
    if args.otel:
        raise BatchError(f"--otel {args.otel}: {problem}")
    print(f"heron batch: warning: {problem}; running without traces", file=sys.stderr)
    return None


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        check_arguments(args)
        tasks = load_tasks(Path(args.tasks))
        out = Path(args.out).expanduser().resolve()
        results = ResultsLog(out)
        for warning in results.warnings:
            print(f"heron batch: warning: {warning}", file=sys.stderr)
        todo = [task for task in tasks if task.id not in results.done]
        if not todo:
            print(f"heron batch: nothing to do: all {len(tasks)} tasks are in {results.path}", file=sys.stderr)
            return 0
        if args.executor == "ray" and importlib.util.find_spec("ray") is None:
            raise BatchError("--executor ray needs Ray: pip install 'heron[ray]'")
        models = resolve_models(todo, args)
        mode = _tracing(args)
    except (BatchError, TaskFileError) as exc:
        print(f"heron batch: {exc}", file=sys.stderr)
        return 2
    skipped = len(tasks) - len(todo)
    if skipped:
        print(f"heron batch: {skipped} of {len(tasks)} tasks already done; running {len(todo)}", file=sys.stderr)
    from heron.coding.tracing import content_wanted

    home = heron_home()
    jobs = [
        Job(
            task=t,
            model=models[t.model].model,
            api_key=models[t.model].api_key,
            out_dir=out,
            home=home,
            tracing=mode,
            trace_content=content_wanted(),
        )
        for t in todo
    ]
    from heron.coding.batch.driver import ExecutorError

    try:
        return asyncio.run(_run(jobs, args, results))
    except ExecutorError as exc:
        print(f"heron batch: {exc}", file=sys.stderr)
        return 2
    finally:
        results.close()


async def _run(jobs: list[Job], args: argparse.Namespace, results: ResultsLog) -> int:
    from heron.cli.batch_progress import BatchProgress
    from heron.coding.batch.driver import Executor, run_jobs

    executor: Executor
    if args.executor == "ray":
        from heron.coding.batch.ray_executor import RayExecutor

        executor = RayExecutor(args.ray_address, log_to_driver=args.otel == "console")
    else:
        from heron.coding.batch.local import LocalExecutor

        executor = LocalExecutor()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def interrupt() -> None:
        print(
            "\nheron batch: stopping (finished tasks are saved; Ctrl+C again to quit at once)",
            file=sys.stderr,
            flush=True,
        )
        stop.set()
        loop.remove_signal_handler(signal.SIGINT)  # a second Ctrl+C is Python's own

    with contextlib.suppress(NotImplementedError, RuntimeError):
        loop.add_signal_handler(signal.SIGINT, interrupt)
    bar = {"auto": None, "bar": True, "plain": False}[args.progress]
    progress = BatchProgress(len(jobs), bar=bar)
    try:
        outcome = await run_jobs(
            jobs, executor, workers=args.workers, results=results, listener=progress, retries=args.retries, stop=stop
        )
    finally:
        progress.close()
        if jobs and jobs[0].tracing and args.executor == "local":
            from heron.coding.tracing import flush_tracing

            flush_tracing()
    left = len(jobs) - len(outcome.results)
    print(
        f"heron batch: {len(outcome.results)} finished ({outcome.failed} failed), {left} not run; "
        f"results in {results.path}",
        file=sys.stderr,
    )
    if outcome.interrupted:
        return EXIT_INTERRUPTED
    return 1 if outcome.failed else 0
