"""The context window a local OpenAI-compatible server really serves, asked of the server.

A model given only as ``--base-url`` and ``--model`` has no configured window; assuming
the catalogue's default (128,000 tokens) against a server started with ``-c 4096``
makes every plan wrong. The servers people run on their own machines each say their
window somewhere, in their own format (docs/configuration.md, "What heron asks a local
server"):

- llama.cpp: ``GET /props`` -> ``default_generation_settings.n_ctx`` (the window of one
  slot, which is what a request gets), and its ``n_predict`` (``params.n_predict`` in
  newer builds) when positive: the server's own output cap (``-n``), so heron asks for no
  more; ``/v1/models`` only has the training context (``meta.n_ctx_train``), an upper
  bound used when ``/props`` is off;
- vLLM: ``GET /v1/models`` -> the served model's ``max_model_len``;
- Ollama: ``POST /api/show`` -> ``num_ctx`` in the model's ``parameters`` text when the
  Modelfile sets it, else the server's default context (4,096) capped by the model's
  ``<arch>.context_length`` in ``model_info``;
- LM Studio: ``GET /api/v0/models/<id>`` -> ``loaded_context_length`` (the loaded
  instance's), else ``max_context_length``.

Every probe is one short request; a server that answers none of them leaves the window
as it was. A connection that is refused ends the probing at once: nothing is listening,
and the request that follows reports that itself. This module only asks; caching the
answer is the caller's (``heron.coding.model_limits``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from heron.ai.providers.http import display_url, root_cause

PROBE_TIMEOUT_S = 1.5  # one probe; a local server answers these in milliseconds
PROBE_DEADLINE_S = 3.0  # all probes of one server together
OLLAMA_DEFAULT_CONTEXT = 4_096  # what Ollama gives a model whose Modelfile sets no num_ctx

_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class ServerWindow:
    """A window a server stated, and where it said so (``"llama.cpp /props"``...); and
    the output limit it stated, when it states one (llama.cpp's ``n_predict``)."""

    window: int
    source: str
    output_limit: int | None = None


class NothingListening(Exception):
    """The server refused the connection: no process listens at that address."""


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
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    if not isinstance(settings, dict):
        return None
    window = _positive(settings.get("n_ctx"))
    if window is None:
        return None
    params = settings.get("params")
    # -1 (the default: no cap) is not a limit; older builds put n_predict beside n_ctx.
    output = _positive(params.get("n_predict")) if isinstance(params, dict) else None
    output = output or _positive(settings.get("n_predict"))
    if output is None:
        return ServerWindow(window, "llama.cpp /props n_ctx")
    return ServerWindow(window, "llama.cpp /props n_ctx, n_predict", output)


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


def probe_window(base_url: str, model_id: str, api_key: str | None = None) -> ServerWindow | None:
    """The window the server at ``base_url`` serves ``model_id`` with, or None when it
    says nowhere. Raises :class:`NothingListening` when the connection is refused."""
    import httpx

    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    deadline = time.monotonic() + PROBE_DEADLINE_S
    with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers, follow_redirects=False, verify=False) as client:

        def ask(method: str, url: str, body: Any = None) -> Any:
            if time.monotonic() > deadline:
                return None
            try:
                response = client.request(method, url, json=body)
            except httpx.ConnectError as exc:
                if isinstance(root_cause(exc), ConnectionRefusedError):
                    raise NothingListening(display_url(base_url)) from exc
                return None
            except httpx.HTTPError:
                return None
            if response.status_code != 200:
                return None
            try:
                return response.json()
            except ValueError:
                return None

        found, trained = from_openai_models(ask("GET", base_url.rstrip("/") + "/models"), model_id)
        if found is not None:
            return found
        found = from_llama_props(ask("GET", root + "/props"))
        if found is not None:
            return ServerWindow(min(found.window, trained), found.source, found.output_limit) if trained else found
        if trained is not None:
            return ServerWindow(trained, "llama.cpp /v1/models n_ctx_train")
        found = from_ollama_show(ask("POST", root + "/api/show", {"model": model_id}))
        if found is not None:
            return found
        return from_lmstudio_model(ask("GET", f"{root}/api/v0/models/{model_id}"))
