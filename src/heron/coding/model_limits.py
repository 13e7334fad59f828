"""A session's window and output limit: the flags, else the configuration, else the server.

``--context-window`` and ``--max-tokens`` win. A window nobody configured (a model made
from ``--base-url``, a models.json entry without ``contextWindow``) is asked of the
server (:func:`heron.ai.server_window.probe_window`), and the answer is cached in
``$HERON_HOME/cache/server-windows.json`` per base URL and model for
:data:`CACHE_SECONDS`, so a ``heron -p`` run after another asks nothing; a configured
window never waits on the server. An output limit nobody configured is at most a
quarter of the window (the policy keeps to that when it learns a smaller window), and at
most the server's own cap when it states one (llama.cpp's ``n_predict``, cached with the
window); a configured one is sent as given (docs/configuration.md, "What heron asks a local server").
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from pathlib import Path

from heron.ai.providers.http import without_userinfo
from heron.ai.server_window import ServerWindow
from heron.ai.types import WINDOW_ASSUMED, Model
from heron.session.private_files import write_private_text

CACHE_SECONDS = 600
CACHE_FILE = Path("cache") / "server-windows.json"
WINDOW_FLAG = "--context-window"


def output_share_limit(window: int) -> int:
    """The output cap of a model whose ``max_tokens`` nobody configured: a quarter of the window."""
    return max(1, window // 4)


def _cache_key(model: Model) -> str:
    """The server without its ``user:password@`` (a cache holds no credential) and the model."""
    return f"{without_userinfo(model.base_url or '').rstrip('/')} {model.id}"


def _read_cache(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def cached_window(home: Path, model: Model, now: float | None = None) -> ServerWindow | None:
    """The window (and output limit) cached for ``model``'s server, when younger than
    :data:`CACHE_SECONDS`."""
    entry = _read_cache(home / CACHE_FILE).get(_cache_key(model))
    if not isinstance(entry, dict):
        return None
    window, source, at = entry.get("window"), entry.get("source"), entry.get("at")
    if not isinstance(window, int) or not isinstance(source, str) or not isinstance(at, int | float):
        return None
    output = entry.get("output")
    output = output if isinstance(output, int) and not isinstance(output, bool) and output > 0 else None
    current = time.time() if now is None else now
    return ServerWindow(window, source, output) if 0 <= current - at < CACHE_SECONDS else None


def store_window(home: Path, model: Model, window: int, source: str, output: int | None = None) -> None:
    """Remember a server's answer (a file that cannot be written only costs a probe), in a
    0600 file keyed without credentials."""
    path = home / CACHE_FILE
    data = _read_cache(path)
    now = time.time()
    data = {
        k: v
        for k, v in data.items()
        if isinstance(v, dict)
        and isinstance(v.get("at"), int | float)
        and now - v["at"] < CACHE_SECONDS
        and without_userinfo(k) == k  # an older version's key with a password: dropped
    }
    data[_cache_key(model)] = {"window": window, "source": source, "output": output, "at": now}
    with contextlib.suppress(OSError):
        write_private_text(path, json.dumps(data, indent=1))


def asks_server(model: Model) -> bool:
    """Whether ``model``'s window is worth asking its server for: nobody configured it and
    it is served over Chat Completions (the API every local server speaks)."""
    return model.window_source == WINDOW_ASSUMED and bool(model.base_url) and model.api == "openai-chat"


def server_window(home: Path, model: Model, api_key: str | None) -> ServerWindow | None:
    """The cached answer, else the server's (then cached); None when it says nowhere or
    nothing listens (the request that follows says so)."""
    cached = cached_window(home, model)
    if cached is not None:
        return cached if cached.window > 0 else None  # 0: the server said nothing, not asked again
    from heron.ai.server_window import NothingListening, probe_window

    try:
        found = probe_window(model.base_url or "", model.id, api_key)
    except NothingListening:
        return None
    if found is None:
        store_window(home, model, 0, "")  # a server without these endpoints costs the probes once
        return None
    store_window(home, model, found.window, found.source, found.output_limit)
    return found


def with_limits(
    model: Model,
    home: Path,
    api_key: str | None,
    *,
    context_window: int | None = None,
    max_tokens: int | None = None,
) -> Model:
    """``model`` with the window and output limit a session plans for: the flags', else
    the configured ones, else the server's window and a quarter of it for the output (less
    when the server caps its output lower)."""
    server_output: int | None = None
    if context_window is not None:
        model = dataclasses.replace(model, context_window=context_window, window_source=WINDOW_FLAG)
    elif asks_server(model):
        found = server_window(home, model, api_key)
        if found is not None:
            model = dataclasses.replace(model, context_window=found.window, window_source=found.source)
            server_output = found.output_limit
    if max_tokens is not None:
        return dataclasses.replace(model, max_tokens=max_tokens, max_tokens_configured=True)
    if not model.max_tokens_configured:
        limit = min(model.max_tokens, output_share_limit(model.context_window), server_output or model.max_tokens)
        model = dataclasses.replace(model, max_tokens=limit)
    return model


def describe_window(model: Model) -> str:
    """Where the model's window came from, for ``/context``."""
    source = model.window_source
    if not source:
        return "configured"
    if source == WINDOW_ASSUMED:
        return "heron's default: not configured, and the server did not say"
    return source
