"""A scripted server speaking three wires at once - Anthropic Messages with server-side
compaction, OpenAI Responses with server-side compaction, and OpenAI Chat - for the
provider-native compaction tests (docs/context.md, "Provider-native compaction").

It plays the plan model of :mod:`tests.cli.audit_harness` and, like the real services
(their public documentation, streamed in the real SSE event shapes):

- **Anthropic** (``/v1/messages``): a request whose ``context_management.edits`` holds a
  ``compact_20260112`` edit needs the ``compact-2026-01-12`` beta header (and
  ``clear_tool_uses_20250919`` the ``context-management-2025-06-27`` one). When the input
  reaches the edit's ``trigger`` it answers with a ``compaction`` block first and reports
  the usage of the compacted context. A ``compaction`` block sent back makes it ignore
  everything before it.
- **OpenAI Responses** (``/v1/responses``): ``context_management: [{"type":
  "compaction", "compact_threshold": N}]`` compacts the same way into an opaque
  ``compaction`` output item (``encrypted_content``); the item sent back in ``input``
  stands for everything before it, and an item it did not write is rejected.
- **Chat** (``/v1/chat/completions``): no native compaction; heron's own summary.

Every request is counted on what the model really reads (after a block sent back) and
rejected over the model's limit, so "0 requests over the window" is what the server saw.
``reject_native``: the server rejects any request with ``context_management`` (an API
without the beta). ``malformed``: its compaction blocks carry no summary (null content,
no ``encrypted_content``).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.cli.audit_harness import AnthropicPlanServer, PlanServer
from tests.coding.test_small_window import call_reply, count_tokens, text_reply
from tests.support.http_server import Recorded, Reply, json_reply
from tests.support.sse import anthropic_reply, openai_reply, responses_reply

COMPACT_BETA = "compact-2026-01-12"
CLEAR_BETA = "context-management-2025-06-27"
NATIVE_MARK = "## Native summary"
CLEARED = "[tool result cleared by the server]"


def wire_of(path: str) -> str:
    if path.endswith("/messages"):
        return "anthropic"
    return "responses" if path.endswith("/responses") else "chat"


class NativeServer(PlanServer):
    def __init__(
        self,
        plans: dict[int, list[Any]],
        limits: dict[str, int],
        *,
        reject_native: bool = False,
        malformed: bool = False,
    ) -> None:
        super().__init__(plans, limits)
        self.reject_native, self.malformed = reject_native, malformed
        self.wire = "chat"
        self.wires: list[str] = []
        self.compactions = 0  # native compactions the server made
        self.native_rejections = 0  # requests rejected for their context_management
        self.sealed: dict[str, str] = {}  # encrypted content -> the summary it stands for
        self._pending: str | None = None  # the summary of the compaction the reply carries
        self._edits: list[dict[str, Any]] | None = None  # the clearing the reply reports
        self.clearings = 0

    # --- decoding: what the model reads, as chat-completions JSON --------------------------

    def _anthropic(self, raw: dict[str, Any]) -> dict[str, Any]:
        turns = list(raw["messages"])
        for n in range(len(turns) - 1, -1, -1):
            content = turns[n]["content"]
            if turns[n]["role"] == "assistant" and isinstance(content, list):
                at = [i for i, b in enumerate(content) if b.get("type") == "compaction"]
                if at:
                    summary = {"role": "user", "content": [{"type": "text", "text": content[at[-1]]["content"]}]}
                    rest = [b for b in content[at[-1] + 1 :]]
                    turns = [summary, *([{"role": "assistant", "content": rest}] if rest else []), *turns[n + 1 :]]
                    break
        body = json.dumps({**raw, "messages": turns}).encode()
        return AnthropicPlanServer.decode(self, Recorded("POST", "/v1/messages", {}, {}, body))  # type: ignore[arg-type]

    def _responses(self, raw: dict[str, Any]) -> dict[str, Any] | str:
        messages: list[dict[str, Any]] = []
        for item in raw["input"]:
            kind = item.get("type")
            if kind == "compaction":
                summary = self.sealed.get(item.get("encrypted_content") or "")
                if summary is None:
                    return "invalid compaction item: encrypted_content could not be decrypted"
                messages = [{"role": "user", "content": [{"type": "text", "text": summary}]}]
            elif kind == "message" and item["role"] == "user":
                messages.extend(
                    {"role": "user", "content": [{"type": "text", "text": p["text"]}]} for p in item["content"]
                )
            elif kind == "message":
                content = item["content"]
                text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
                messages.append({"role": "assistant", "content": text})
            elif kind == "function_call":
                call = {
                    "id": item["call_id"],
                    "type": "function",
                    "function": {"name": item["name"], "arguments": item["arguments"]},
                }
                if messages and messages[-1]["role"] == "assistant":
                    messages[-1].setdefault("tool_calls", []).append(call)
                else:
                    messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
            elif kind == "function_call_output":
                output = item["output"]
                text = output if isinstance(output, str) else "".join(p.get("text", "") for p in output)
                messages.append({"role": "tool", "tool_call_id": item["call_id"], "content": text})
        system = {"role": "system", "content": raw.get("instructions") or ""}
        return {
            "model": raw["model"],
            "messages": [system, *messages],
            "tools": raw.get("tools"),
            "max_tokens": raw.get("max_output_tokens"),
        }

    def _trigger(self, raw: dict[str, Any]) -> int | None:
        managed = raw.get("context_management")
        if self.wire == "anthropic" and isinstance(managed, dict):
            for edit in managed.get("edits") or []:
                if edit.get("type") == "compact_20260112":
                    return int((edit.get("trigger") or {}).get("value") or 150_000)
        if self.wire == "responses" and isinstance(managed, list):
            for entry in managed:
                if entry.get("type") == "compaction":
                    return int(entry.get("compact_threshold") or 0)
        return None

    def _refusal(self, request: Recorded, raw: dict[str, Any]) -> str | None:
        """Why the server refuses the request's context management (None: it takes it)."""
        managed = raw.get("context_management")
        if managed is None or self.wire == "chat":
            return None if managed is None else "Unrecognized request argument supplied: context_management"
        if self.reject_native:
            return "context_management: Extra inputs are not permitted"
        if self.wire == "anthropic":
            betas = request.headers.get("anthropic-beta", "").split(",")
            kinds = {edit.get("type") for edit in managed.get("edits") or []}
            if "compact_20260112" in kinds and COMPACT_BETA not in betas:
                return f"compact_20260112 requires the {COMPACT_BETA} beta"
            if "clear_tool_uses_20250919" in kinds and CLEAR_BETA not in betas:
                return f"clear_tool_uses_20250919 requires the {CLEAR_BETA} beta"
        return None

    def _invalid(self, text: str) -> Reply:
        if self.wire == "anthropic":
            return json_reply(400, {"type": "error", "error": {"type": "invalid_request_error", "message": text}})
        return json_reply(400, {"error": {"message": text, "type": "invalid_request_error", "code": None}})

    # --- serving ------------------------------------------------------------------------------

    def __call__(self, request: Recorded) -> Reply:
        raw = request.json()
        with self.lock:
            self.wire = wire_of(request.path)
            self.raw.append(raw)
            self.wires.append(self.wire)
            self.turns.append(self.turn)
            refusal = self._refusal(request, raw)
            decoded = self._decode(raw) if refusal is None else refusal
            if isinstance(decoded, str):
                self.native_rejections += refusal is not None
                self.bodies.append({"model": raw.get("model"), "messages": []})
                self.accepted.append(False)
                return self._invalid(decoded)
            decoded = self._clear(raw, decoded)
            self.bodies.append(decoded)
            prompt_tokens, completion = count_tokens(decoded)
            limit = self.limits[decoded["model"]]
            ok = prompt_tokens + completion <= limit
            self.accepted.append(ok)
            if not ok:
                self.rejected += 1
                return self.reject(limit, prompt_tokens + completion)
            self._pending = None
            trigger = self._trigger(raw)
            if trigger is not None and prompt_tokens >= trigger:  # heron's summaries never carry one
                self.compactions += 1
                self._pending = f"{NATIVE_MARK} {self.compactions}\n- the plan's earlier steps are done"
                compacted = {
                    **decoded,
                    "messages": [decoded["messages"][0], {"role": "user", "content": self._pending}],
                }
                if not self.malformed:  # a failed compaction (no summary) compacted nothing
                    prompt_tokens = count_tokens(compacted)[0]
            return self._reply(decoded, prompt_tokens)

    def _clear(self, raw: dict[str, Any], decoded: dict[str, Any]) -> dict[str, Any]:
        """Anthropic's ``clear_tool_uses_20250919``: past its trigger, the oldest tool
        results (all but ``keep``) replaced by a placeholder, when that clears at least
        ``clear_at_least``; what was cleared is reported in the reply's ``message_delta``."""
        self._edits = None
        managed = raw.get("context_management")
        edits = managed.get("edits") or [] if self.wire == "anthropic" and isinstance(managed, dict) else []
        edit = next((e for e in edits if e.get("type") == "clear_tool_uses_20250919"), None)
        if edit is None or count_tokens(decoded)[0] < edit["trigger"]["value"]:
            return decoded
        results = [i for i, m in enumerate(decoded["messages"]) if m["role"] == "tool"]
        keep = edit["keep"]["value"]
        oldest = results[: max(0, len(results) - keep)]
        cleared = [m for i, m in enumerate(decoded["messages"]) if i in oldest and m["content"] != CLEARED]
        messages = [{**m, "content": CLEARED} if i in oldest else m for i, m in enumerate(decoded["messages"])]
        after = {**decoded, "messages": messages}
        saved = count_tokens(decoded)[0] - count_tokens(after)[0]
        if not cleared or saved < (edit.get("clear_at_least") or {}).get("value", 0):
            return decoded
        self.clearings += 1
        self._edits = [
            {"type": "clear_tool_uses_20250919", "cleared_tool_uses": len(cleared), "cleared_input_tokens": saved}
        ]
        return after

    def _decode(self, raw: dict[str, Any]) -> dict[str, Any] | str:
        if self.wire == "anthropic":
            return self._anthropic(raw)
        if self.wire == "responses":
            return self._responses(raw)
        return dict(raw)

    def reject(self, limit: int, total: int) -> Reply:
        if self.wire == "anthropic":
            return AnthropicPlanServer.reject(self, limit, total)  # type: ignore[arg-type]
        return super().reject(limit, total)

    def text(self, text: str, used: int) -> Reply:
        return self.calls_or_text(text, [], used)

    def call(self, call_id: str, name: str, args: dict[str, Any], used: int) -> Reply:
        return self.calls_or_text("", [(call_id, name, args)], used)

    def calls(self, calls: list[tuple[str, str, dict[str, Any]]], used: int) -> Reply:
        return self.calls_or_text("", calls, used)

    def calls_or_text(self, text: str, calls: list[tuple[str, str, dict[str, Any]]], used: int) -> Reply:
        summary, self._pending = self._pending, None
        if self.wire == "anthropic":
            block: str | bool | None = False if summary is None else None if self.malformed else summary
            return anthropic_reply(text, calls, input_tokens=used, compaction=block, applied_edits=self._edits)
        if self.wire == "responses":
            item: tuple[str, str | None] | None = None
            if summary is not None:
                sealed = "enc:" + base64.b64encode(summary.encode()).decode()
                self.sealed[sealed] = summary
                item = (f"cmp_{self.compactions}", None if self.malformed else sealed)
            return responses_reply(text, calls, input_tokens=used, compaction=item)
        if calls and len(calls) > 1:
            return openai_reply("", calls, prompt_tokens=used)
        if calls:
            return call_reply(calls[0][0], calls[0][1], calls[0][2], used)
        return text_reply(text, used)
