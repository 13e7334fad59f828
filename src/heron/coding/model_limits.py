"""A session's window and output limit: the flags, else the configuration, else the server.

``--context-window`` and ``--max-tokens`` win. A window nobody configured (a model made
from ``--base-url``, a models.json entry without ``contextWindow``) is asked of the
server (:func:`heron.ai.server_window.probe_window`, a few seconds at most whatever the
server does), and the answer is cached in ``$HERON_HOME/cache/server-windows.json`` per
base URL and model for :data:`CACHE_SECONDS`, so a ``heron -p`` run after another asks
nothing; a server that says nothing is remembered as such for as long, and one that did
not answer in time for :data:`RETRY_SECONDS` (heron then plans for its default window and
says so). A configured window never waits on the server. An output limit nobody
configured is at most a quarter of the window (the policy keeps to that when it learns a
smaller window), and at most the server's own cap when it states one (llama.cpp's
``n_predict``, cached with the window); a configured one is sent as given. How many
requests the server serves at once (llama.cpp's ``total_slots``) is cached with the window
and becomes :attr:`Model.server_slots` (docs/configuration.md, "What heron asks a local
server").

The other questions heron asks a local server before a first request (its chat template,
its tokenizer: :mod:`heron.coding.first_count`) have their answers remembered beside, in
``cache/server-answers.json`` (:func:`remembered`, :func:`remember`): an endpoint the
server lacks is not asked for again by the next process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from heron.ai.providers.http import display_url, without_userinfo
from heron.ai.server_window import PROBE_DEADLINE_S, NoAnswerInTime, NothingListening, ServerWindow, probe_window
from heron.ai.types import WINDOW_ASSUMED, Model
from heron.coding.reading_speeds import server_key
from heron.session.private_files import write_private_text

CACHE_SECONDS = 600  # an answer (a window, "not found") is asked for again after this
RETRY_SECONDS = 60  # a server that did not answer in time is asked again after this
CACHE_FILE = Path("cache") / "server-windows.json"
ANSWERS_FILE = Path("cache") / "server-answers.json"
WINDOW_FLAG = "--context-window"
UNANSWERED = "no answer in time"  # the source of a cached window the server did not say in time

log = logging.getLogger(__name__)

Notice = Callable[[str], None]


def _log_notice(text: str) -> None:
    log.warning("%s", text)


def output_share_limit(window: int) -> int:
    """The output cap of a model whose ``max_tokens`` nobody configured: a quarter of the window."""
    return max(1, window // 4)


def _read_cache(path: Path) -> dict[str, object]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _fresh(record: Any, now: float) -> bool:
    """Whether a cached record is younger than its ``ttl`` (:data:`CACHE_SECONDS` unless it says)."""
    if not isinstance(record, dict):
        return False
    at, ttl = record.get("at"), record.get("ttl", CACHE_SECONDS)
    return isinstance(at, int | float) and isinstance(ttl, int | float) and 0 <= now - at < ttl


def _store_record(home: Path, name: Path, key: str, record: dict[str, Any], ttl: float) -> None:
    """Put ``record`` under ``key`` in the cache file ``name``, dropping expired records (a
    file that cannot be written only costs a probe), in a 0600 file whose keys hold no
    credentials."""
    path = home / name
    now = time.time()
    data = {
        k: v for k, v in _read_cache(path).items() if _fresh(v, now) and without_userinfo(k) == k
    }  # an older key with a password: dropped
    data[key] = {**record, "at": now, **({"ttl": ttl} if ttl != CACHE_SECONDS else {})}
    with contextlib.suppress(OSError):
        write_private_text(path, json.dumps(data, indent=1))


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def cached_window(home: Path, model: Model, now: float | None = None) -> ServerWindow | None:
    """The window (output limit, slots) cached for ``model``'s server while it is fresh; a
    window of 0 is a server that said nothing (source ``""``) or did not answer in time
    (source :data:`UNANSWERED`)."""
    entry = _read_cache(home / CACHE_FILE).get(server_key(model))
    if not isinstance(entry, dict) or not _fresh(entry, time.time() if now is None else now):
        return None
    window, source = entry.get("window"), entry.get("source")
    if not isinstance(window, int) or not isinstance(source, str):
        return None
    return ServerWindow(window, source, _count(entry.get("output")), _count(entry.get("slots")))


def store_window(
    home: Path,
    model: Model,
    window: int,
    source: str,
    output: int | None = None,
    slots: int | None = None,
    ttl: float = CACHE_SECONDS,
) -> None:
    """Remember a server's answer for ``ttl`` seconds."""
    record = {"window": window, "source": source, "output": output, "slots": slots}
    _store_record(home, CACHE_FILE, server_key(model), record, ttl)


def remembered(home: Path, model: Model, question: str, now: float | None = None) -> str | None:
    """What ``model``'s server answered ``question`` (an endpoint: ``"/tokenize"``...) in
    an earlier process, while that answer is fresh."""
    entry = _read_cache(home / ANSWERS_FILE).get(f"{server_key(model)} {question}")
    if not isinstance(entry, dict) or not _fresh(entry, time.time() if now is None else now):
        return None
    answer = entry.get("answer")
    return answer if isinstance(answer, str) else None


def remember(home: Path, model: Model, question: str, answer: str, ttl: float = CACHE_SECONDS) -> None:
    """Remember ``answer`` to ``question`` for the next processes (:func:`remembered`)."""
    _store_record(home, ANSWERS_FILE, f"{server_key(model)} {question}", {"answer": answer}, ttl)


def asks_server(model: Model) -> bool:
    """Whether ``model``'s window is worth asking its server for: nobody configured it and
    it is served over Chat Completions (the API every local server speaks)."""
    return model.window_source == WINDOW_ASSUMED and bool(model.base_url) and model.api == "openai-chat"


def serves_beside(model: Model) -> bool:
    """Whether a background summary may be sent beside the turn to ``model``'s server
    (docs/context.md, "Background compaction"): not to a server that said how many slots it
    has (llama.cpp). With one slot the summary would only wait for the turn's request, or
    hold the turn's next one behind it. With several, llama.cpp's slots may share one KV
    cache of the window's size - its default when ``--parallel`` is not given: 4 slots, each
    reporting the whole ``-c`` as its ``n_ctx`` - and ``/props`` does not say whether they
    do: two requests of a session near its threshold overflow that cache together, and
    llama.cpp then fails every request in flight ("Context size has been exceeded") and
    clears their cached prompts. A server that did not say (a hosted API, vLLM, Ollama)
    serves concurrent requests in full or queues them."""
    return model.server_slots is None


def probe_due(home: Path, model: Model, context_window: int | None = None) -> bool:
    """Whether :func:`with_limits` would ask ``model``'s server now (nothing configured or
    given, nothing cached): a network call before the session's first request."""
    return context_window is None and asks_server(model) and cached_window(home, model) is None


def _unanswered_notice(model: Model, why: str) -> str:
    return (
        f"{why}: planning for heron's default window of {model.context_window:,} tokens "
        "(--context-window, or contextWindow in models.json, sets it)"
    )


def server_window(home: Path, model: Model, api_key: str | None, notice: Notice = _log_notice) -> ServerWindow | None:
    """The cached answer, else the server's (then cached); None when it says nowhere,
    does not answer in time (``notice`` says so) or nothing listens (the request that
    follows says so)."""
    cached = cached_window(home, model)
    if cached is not None:
        if cached.source == UNANSWERED:
            where = display_url(model.base_url or "")
            notice(_unanswered_notice(model, f"{where} did not say its context window in time a moment ago"))
        return cached if cached.window > 0 else None  # 0: the server said nothing, not asked again

    try:
        found = probe_window(model.base_url or "", model.id, api_key)
    except NothingListening:
        return None
    except NoAnswerInTime as exc:
        store_window(home, model, 0, UNANSWERED, ttl=RETRY_SECONDS)
        notice(_unanswered_notice(model, f"{exc} (heron waits {PROBE_DEADLINE_S:g} s at most)"))
        return None
    if found is None:
        store_window(home, model, 0, "")  # a server without these endpoints costs the probes once
        return None
    store_window(home, model, found.window, found.source, found.output_limit, found.slots)
    return found


def with_limits(
    model: Model,
    home: Path,
    api_key: str | None,
    *,
    context_window: int | None = None,
    max_tokens: int | None = None,
    notice: Notice = _log_notice,
) -> Model:
    """``model`` with the window and output limit a session plans for: the flags', else
    the configured ones, else the server's window and a quarter of it for the output (less
    when the server caps its output lower), and the server's slots."""
    server_output: int | None = None
    if context_window is not None:
        model = dataclasses.replace(model, context_window=context_window, window_source=WINDOW_FLAG)
    elif asks_server(model):
        found = server_window(home, model, api_key, notice)
        if found is not None:
            model = dataclasses.replace(
                model, context_window=found.window, window_source=found.source, server_slots=found.slots
            )
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
