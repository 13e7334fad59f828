"""``heron --mode acp``: serve the Agent Client Protocol on stdin/stdout.

stdout carries only protocol messages: before serving, heron keeps a private copy of the
stdout descriptor for the protocol and points descriptor 1 (and ``sys.stdout``) at
stderr, so a stray print, a warning or a child process cannot corrupt the stream.
Malformed JSON-RPC, unknown methods and bad parameters are answered with JSON-RPC
errors by the SDK's connection and by :class:`heron.cli.acp.agent.HeronAgent`; the
process serves until stdin ends.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from heron.ai.models import ModelRegistry, heron_home
from heron.cli.acp.guard import guarded
from heron.cli.acp.output import CleanWriter
from heron.cli.events_json import encode_line


class UsageError(RuntimeError):
    pass


def check(args: argparse.Namespace) -> None:
    if args.messages or args.print_prompt is not None:
        raise UsageError("--mode acp takes no task: the editor sends prompts over the protocol (docs/editors.md)")
    for flag, on in (
        ("-c/--continue", args.continue_session),
        ("-r/--resume", args.resume),
        ("--session", bool(args.session)),
    ):
        if on:
            raise UsageError(f"{flag} does not apply to --mode acp: the editor opens sessions with session/load")
    if args.base_url is not None:
        from heron.cli.usage import UsageError as AppUsageError
        from heron.cli.usage import check_base_url

        try:
            check_base_url(args.base_url)
        except AppUsageError as exc:
            raise UsageError(str(exc)) from exc


def _add_set_model_route(conn: Any, agent: Any) -> None:
    """``session/set_model`` (the model request of earlier ACP versions, still sent by
    some clients) routed to :meth:`HeronAgent.set_session_model`. The SDK 0.12 router
    has no public hook for a method outside its schema, so the route is added to it."""
    from acp.router import MessageRouter, Route

    router = getattr(getattr(conn, "_conn", None), "_handler", None)
    if not isinstance(router, MessageRouter):
        return

    async def handle(params: Any) -> Any:
        from acp import RequestError

        if (
            not isinstance(params, dict)
            or not isinstance(params.get("sessionId"), str)
            or not isinstance(params.get("modelId"), str)
        ):
            raise RequestError.invalid_params({"message": "session/set_model needs sessionId and modelId strings"})
        return await agent.set_session_model(params["sessionId"], params["modelId"])

    router.add_route(Route(method="session/set_model", func=handle, kind="request"))


async def serve(args: argparse.Namespace, protocol_out: int) -> int:
    from acp import run_agent
    from acp.core import DEFAULT_STDIO_BUFFER_LIMIT_BYTES
    from acp.stdio import stdio_streams

    from heron.cli.acp.agent import HeronAgent

    registry = ModelRegistry.load()
    for error in registry.errors:
        print(f"heron: warning: {error}", file=sys.stderr)
    agent = HeronAgent(args, registry, heron_home())
    connect = agent.on_connect

    def on_connect(conn: Any) -> None:
        connect(conn)
        _add_set_model_route(conn, agent)

    agent.on_connect = on_connect  # type: ignore[method-assign]
    saved = sys.stdout
    sys.stdout = os.fdopen(protocol_out, "w", closefd=False)
    try:
        reader, writer = await stdio_streams(limit=DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    finally:
        sys.stdout = saved

    writer = CleanWriter(writer)  # the SDK's lines through heron's one JSON encoder (heron.cli.acp.output)

    def reply(payload: dict[str, Any]) -> None:
        writer.write(encode_line(payload))

    clean, pump = guarded(reader, reply, DEFAULT_STDIO_BUFFER_LIMIT_BYTES)
    try:
        # session/close, /fork and /resume are routed by the SDK only with its unstable flag
        await run_agent(agent, writer, clean, use_unstable_protocol=True)  # type: ignore[arg-type]
    finally:
        pump.cancel()
        agent.close()
    return 0


def run_acp(args: argparse.Namespace) -> int:
    try:
        check(args)
    except UsageError as exc:
        print(f"heron: {exc}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        return asyncio.run(serve(args, protocol_out))
    except KeyboardInterrupt:
        return 130
