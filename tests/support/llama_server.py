"""A scripted server that behaves like llama.cpp's ``llama-server`` started with ``-c N``.

It speaks what the real one speaks: ``GET /props`` (``default_generation_settings.n_ctx``,
``params.n_predict``: the ``-n`` cap, -1 for none, ``total_slots`` and ``endpoint_slots``),
``GET /slots`` (each slot's ``n_ctx``; 501 with ``--no-slots``), ``GET /v1/models`` (with
``meta.n_ctx_train``), ``POST /tokenize``, ``POST /apply-template`` (the prompt its chat
template renders; ``drops_tools`` makes it a template without a tools section, as Gemma
3's is, and the tools then cost nothing), ``POST /v1/chat/completions`` streamed
as SSE with a final ``usage`` chunk, and - for a prompt that does not fit - HTTP 400 with
llama.cpp's own error body (``exceed_context_size_error``, ``n_prompt_tokens``,
``n_ctx``). Its "tokenizer" counts ``chars_per_token`` characters a token, unlike
heron's chars/4, the way a real model's tokenizer differs from heron's estimate. Answers
are scripted: a summary for a summary request (recognised by the summariser's system
prompt), else a short text.
"""

from __future__ import annotations

import json
import math
import threading
from dataclasses import dataclass, field
from typing import Any

from tests.support.http_server import LocalServer, Recorded, Reply, json_reply
from tests.support.summaries import is_summary_body

MODEL_PATH = "/models/gemma-3-270m-it-Q4_K_M.gguf"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def body_chars(body: dict[str, Any], drops_tools: bool = False) -> int:
    """The characters of a chat request the template feeds the model: every message's
    text and tool calls, and the tool schemas (unless the template drops them)."""
    chars = 0
    for message in body.get("messages", []):
        chars += len(_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function", {})
            chars += len(function.get("name", "")) + len(function.get("arguments", ""))
    if body.get("tools") and not drops_tools:
        chars += len(json.dumps(body["tools"]))
    return chars


def rendered(body: dict[str, Any], drops_tools: bool) -> str:
    """A chat template's prompt: each message framed, the tools first unless dropped. Its
    length over ``chars_per_token`` is what :meth:`LlamaServer.tokens` counts, framing aside."""
    tools = "" if drops_tools or not body.get("tools") else json.dumps(body["tools"])
    turns = "".join(f"<{m.get('role')}>{_text(m.get('content'))}" for m in body.get("messages", []))
    return tools + turns


def requested_output(body: dict[str, Any]) -> int:
    return int(body.get("max_completion_tokens") or body.get("max_tokens") or 0)


def is_summary(body: dict[str, Any]) -> bool:
    return is_summary_body(body)


def _sse(*events: dict[str, Any]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode() + b"data: [DONE]\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None, usage: dict[str, int] | None = None) -> dict[str, Any]:
    event: dict[str, Any] = {
        "id": "chatcmpl-llama",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL_PATH,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        event["usage"] = usage
    return event


@dataclass
class Served:
    """One chat request as the server saw it."""

    summary: bool
    prompt_tokens: int
    max_tokens: int
    rejected: bool
    body: dict[str, Any]


@dataclass
class LlamaBehaviour:
    n_ctx: int = 4_096
    n_ctx_train: int = 32_768
    chars_per_token: float = 4.0
    props: bool = True  # llama-server --no-props... answers 404 on /props
    tokenize: bool = True  # POST /tokenize {"content": text} -> {"tokens": [...]}
    apply_template: bool = True  # POST /apply-template {"messages": ...} -> {"prompt": ...}
    drops_tools: bool = False  # the chat template has no tools section (Gemma 3's)
    n_predict: int = -1  # llama-server -n: reported in /props
    total_slots: int = 1  # llama-server -np (llama.cpp's own default, -np unset, is 4 sharing one cache)
    slots_endpoint: bool = True  # GET /slots (llama-server --no-slots answers 501)
    slot_n_ctx: int | None = None  # what /slots says each slot has (default: n_ctx)
    stall: dict[str, str] = field(default_factory=dict)  # path -> Reply.stall: never answered
    answer: str = "Done."
    summary: str = "## Goal\nanswer the prompts\n## Progress\nanswered them"
    served: list[Served] = field(default_factory=list)


class LlamaServer:
    """``LocalServer`` with llama.cpp's endpoints and limits (``.url`` is the root;
    heron's ``--base-url`` is ``.base_url``)."""

    def __init__(self, behaviour: LlamaBehaviour | None = None) -> None:
        self.behaviour = behaviour or LlamaBehaviour()
        self.lock = threading.Lock()
        self.server = LocalServer(self._respond, answers_probes=True)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def base_url(self) -> str:
        return self.server.url + "/v1"

    @property
    def requests(self) -> list[Recorded]:
        return self.server.requests

    @property
    def served(self) -> list[Served]:
        return self.behaviour.served

    def paths(self) -> list[str]:
        return [r.path for r in self.server.requests]

    def close(self) -> None:
        self.server.close()

    def tokens(self, body: dict[str, Any]) -> int:
        """The prompt tokens of a request by this server's tokenizer (template framing included)."""
        messages = len(body.get("messages", []))
        return math.ceil(body_chars(body, self.behaviour.drops_tools) / self.behaviour.chars_per_token) + 4 * messages

    def _respond(self, request: Recorded) -> Reply:
        b = self.behaviour
        if request.path in b.stall:
            return Reply(stall=b.stall[request.path])
        if request.method == "GET" and request.path == "/slots":
            if not b.slots_endpoint:
                error = {
                    "code": 501,
                    "message": "This server does not support slots endpoint.",
                    "type": "not_supported_error",
                }
                return json_reply(501, {"error": error})
            n_ctx = b.slot_n_ctx or b.n_ctx
            return json_reply(200, [{"id": i, "n_ctx": n_ctx, "is_processing": False} for i in range(b.total_slots)])
        if request.method == "GET" and request.path == "/props":
            if not b.props:
                return json_reply(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
            settings = {"n_ctx": b.n_ctx, "params": {"n_predict": b.n_predict, "temperature": 0.8}}
            props = {
                "default_generation_settings": settings,
                "total_slots": b.total_slots,
                "model_path": MODEL_PATH,
                "endpoint_slots": b.slots_endpoint,
            }
            return json_reply(200, props)
        if request.method == "GET" and request.path == "/v1/models":
            meta = {"vocab_type": 1, "n_vocab": 262144, "n_ctx_train": b.n_ctx_train, "n_embd": 640}
            entry = {"id": MODEL_PATH, "object": "model", "created": 1, "owned_by": "llamacpp", "meta": meta}
            return json_reply(200, {"object": "list", "data": [entry]})
        if request.method == "POST" and request.path == "/tokenize" and b.tokenize:
            content = request.json().get("content", "")
            return json_reply(200, {"tokens": list(range(math.ceil(len(content) / b.chars_per_token)))})
        if request.method == "POST" and request.path == "/apply-template" and b.apply_template:
            return json_reply(200, {"prompt": rendered(request.json(), b.drops_tools)})
        if request.method == "POST" and request.path == "/v1/chat/completions":
            return self._chat(request.json())
        return json_reply(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})

    def _chat(self, body: dict[str, Any]) -> Reply:
        b = self.behaviour
        prompt = self.tokens(body)
        summary = is_summary(body)
        rejected = prompt >= b.n_ctx
        with self.lock:
            b.served.append(Served(summary, prompt, requested_output(body), rejected, body))
        if rejected:
            message = (
                f"request ({prompt} tokens) exceeds the available context size ({b.n_ctx} tokens), try increasing it"
            )
            error = {"code": 400, "message": message, "type": "exceed_context_size_error"}
            return json_reply(400, {"error": {**error, "n_prompt_tokens": prompt, "n_ctx": b.n_ctx}})
        text = b.summary if summary else b.answer
        completion = min(max(1, math.ceil(len(text) / b.chars_per_token)), max(1, b.n_ctx - prompt))
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        events = (
            _chunk({"role": "assistant", "content": text}),
            _chunk({}, "stop"),
            _chunk({}, None, usage) | {"choices": []},
        )
        return Reply(body=_sse(*events), chunk_size=512)
