"""The context window a local OpenAI-compatible server really serves, asked of the server.

A model given only as ``--base-url`` and ``--model`` has no configured window; assuming
the catalogue's default (128,000 tokens) against a server started with ``-c 4096``
makes every plan wrong. The servers people run on their own machines each say their
window somewhere, in their own format (docs/configuration.md, "What heron asks a local
server"):

- llama.cpp: ``GET /props`` -> ``default_generation_settings.n_ctx``: the window of one
  slot, which is what a request gets (llama.cpp's ``slot_n_ctx``: ``-c`` divided by
  ``--parallel`` when each slot has its own cache, the whole ``-c`` when the slots share
  one - its default when ``--parallel`` is not given: 4 slots over one cache), and
  ``total_slots``: how many requests it serves at once (:attr:`ServerWindow.slots`); with
  several, ``GET /slots`` (each slot's ``n_ctx``) when the server has it on, the
  smallest of them. Its ``n_predict`` (``params.n_predict`` in newer builds) when
  positive: the server's own output cap (``-n``), so heron asks for no more;
  ``/v1/models`` only has the training context (``meta.n_ctx_train``), an upper bound
  used when ``/props`` is off;
- vLLM: ``GET /v1/models`` -> the served model's ``max_model_len``;
- Ollama: ``POST /api/show`` -> ``num_ctx`` in the model's ``parameters`` text when the
  Modelfile sets it, else the server's default context (4,096) capped by the model's
  ``<arch>.context_length`` in ``model_info``;
- LM Studio: ``GET /api/v0/models/<id>`` -> ``loaded_context_length`` (the loaded
  instance's), else ``max_context_length``.

Every probe is one short request, and all of them together end by
:data:`PROBE_DEADLINE_S` whatever the server does (:mod:`heron.ai.server_probe`). A
server that answers none of them ("not found" everywhere) leaves the window as it was; one
that did not answer in time raises :class:`NoAnswerInTime`, so the caller asks again soon
rather than remembering "nothing". A refused connection ends the probing at once: nothing
is listening, and the request that follows reports that itself. This module only asks;
caching the answer is the caller's (``heron.coding.model_limits``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

from heron.ai.server_probe import NothingListening, Prober, run_round

__all__ = ["NoAnswerInTime", "NothingListening", "ServerWindow", "probe_window", "server_root"]

PROBE_TIMEOUT_S = 1.5  # one probe; a local server answers these in milliseconds
PROBE_DEADLINE_S = 3.0  # all probes of one server together, whatever the server does
OLLAMA_DEFAULT_CONTEXT = 4_096  # what Ollama gives a model whose Modelfile sets no num_ctx

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ServerWindow:
    """A window a server stated, and where it said so (``"llama.cpp /props"``...); the
    output limit it stated, when it states one (llama.cpp's ``n_predict``); and how many
    requests it serves at once, when it says (llama.cpp's ``total_slots``)."""

    window: int
    source: str
    output_limit: int | None = None
    slots: int | None = None


class NoAnswerInTime(Exception):
    """The server did not answer the probes by the deadline (or answered "try later": a
    5xx) before any of them told the window. ``str()`` names the server and the paths."""


def server_root(base_url: str) -> str:
    """``http://host:port`` and any path before ``/v1``: where the servers' own
    endpoints (``/props``, ``/api/show``) live."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _entry(listing: Any, model_id: str) -> dict[str, Any] | None:
    """The served model's entry in an OpenAI ``/v1/models`` list (the only one, when a
    server serves one model under another name, as llama.cpp does)."""
    data = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(data, list):
        return None
    entries = [e for e in data if isinstance(e, dict)]
    for entry in entries:
        if entry.get("id") == model_id:
            return entry
    return entries[0] if len(entries) == 1 else None


def from_openai_models(listing: Any, model_id: str) -> tuple[ServerWindow | None, int | None]:
    """vLLM's window, and llama.cpp's training context (an upper bound), from ``/v1/models``."""
    entry = _entry(listing, model_id)
    if entry is None:
        return None, None
    window = _positive(entry.get("max_model_len"))
    if window is not None:
        return ServerWindow(window, "vLLM /v1/models max_model_len"), None
    meta = entry.get("meta")
    return None, _positive(meta.get("n_ctx_train")) if isinstance(meta, dict) else None


def from_llama_props(props: Any) -> ServerWindow | None:
    """The window of one slot, the output cap and the slot count from llama.cpp's ``/props``."""
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    if not isinstance(settings, dict):
        return None
    window = _positive(settings.get("n_ctx"))
    if window is None:
        return None
    slots = _positive(props.get("total_slots"))
    params = settings.get("params")
    # -1 (the default: no cap) is not a limit; older builds put n_predict beside n_ctx.
    output = _positive(params.get("n_predict")) if isinstance(params, dict) else None
    output = output or _positive(settings.get("n_predict"))
    if output is None:
        return ServerWindow(window, "llama.cpp /props n_ctx", slots=slots)
    return ServerWindow(window, "llama.cpp /props n_ctx, n_predict", output, slots)


def smallest_slot(slots: Any) -> int | None:
    """The smallest ``n_ctx`` of llama.cpp's ``/slots`` list (a request may get any slot)."""
    if not isinstance(slots, list):
        return None
    sizes = [n for s in slots if isinstance(s, dict) and (n := _positive(s.get("n_ctx"))) is not None]
    return min(sizes) if sizes else None


def from_ollama_show(show: Any) -> ServerWindow | None:
    if not isinstance(show, dict):
        return None
    parameters = show.get("parameters")
    if isinstance(parameters, str) and (match := _NUM_CTX.search(parameters)):
        return ServerWindow(int(match.group(1)), "Ollama /api/show num_ctx")
    info = show.get("model_info")
    if not isinstance(info, dict):
        return None
    trained = [v for k, v in info.items() if k.endswith(".context_length") and _positive(v)]
    if not trained:
        return None
    return ServerWindow(min(OLLAMA_DEFAULT_CONTEXT, trained[0]), "Ollama /api/show (default num_ctx)")


def from_lmstudio_model(model: Any) -> ServerWindow | None:
    if not isinstance(model, dict):
        return None
    loaded = _positive(model.get("loaded_context_length"))
    if loaded is not None:
        return ServerWindow(loaded, "LM Studio /api/v0/models loaded_context_length")
    trained = _positive(model.get("max_context_length"))
    return ServerWindow(trained, "LM Studio /api/v0/models max_context_length") if trained is not None else None


async def _llama_window(prober: Prober, root: str, props: Any, trained: int | None) -> ServerWindow | None:
    """llama.cpp's answer: ``/props``, the smallest slot of ``/slots`` when it has several
    (and the endpoint is on), capped by the training context."""
    found = from_llama_props(props)
    if found is None:
        return None
    if (found.slots or 1) > 1 and props.get("endpoint_slots") is not False:
        smallest = (await prober.ask("GET", root + "/slots")).then(smallest_slot)
        if smallest.kind == "ok" and smallest.value < found.window:
            found = replace(found, window=smallest.value, source="llama.cpp /slots n_ctx")
    return replace(found, window=min(found.window, trained)) if trained else found


async def ask_window(prober: Prober, base_url: str, model_id: str) -> ServerWindow | None:
    """The window of ``model_id`` at ``base_url``: each server's endpoint in turn (module
    docstring), until one tells it. None when every one said "not found"; raises
    :class:`NoAnswerInTime` when one that could have told it did not answer in time."""
    root = server_root(base_url)
    models = await prober.ask("GET", base_url.rstrip("/") + "/models")
    found, trained = from_openai_models(models.value, model_id)
    if found is not None:
        return found
    props = await prober.ask("GET", root + "/props")
    found = await _llama_window(prober, root, props.value, trained)
    if found is not None:
        return found
    if trained is not None and props.kind != "unknown":
        return ServerWindow(trained, "llama.cpp /v1/models n_ctx_train")
    if trained is None:
        found = from_ollama_show((await prober.ask("POST", root + "/api/show", {"model": model_id})).value)
        found = found or from_lmstudio_model((await prober.ask("GET", f"{root}/api/v0/models/{model_id}")).value)
        if found is not None:
            return found
    if prober.unanswered:
        raise NoAnswerInTime(f"{prober.server} did not answer {', '.join(prober.unanswered)} in time")
    return None


def probe_window(base_url: str, model_id: str, api_key: str | None = None) -> ServerWindow | None:
    """The window the server at ``base_url`` serves ``model_id`` with (:func:`ask_window`),
    asked within :data:`PROBE_DEADLINE_S`. Raises :class:`NothingListening` when the
    connection is refused, :class:`NoAnswerInTime` when the server did not answer in time."""
    return run_round(
        base_url, api_key, PROBE_DEADLINE_S, PROBE_TIMEOUT_S, lambda prober: ask_window(prober, base_url, model_id)
    )
