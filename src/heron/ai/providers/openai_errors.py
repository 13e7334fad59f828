"""OpenAI-style error objects (Chat Completions and the servers that copy it).

``{"error": {"message", "type", "code"}}`` in an HTTP error body or inside the stream;
OpenRouter adds the upstream's own text in ``metadata.raw``.
"""

from __future__ import annotations

import json
from typing import Any

from heron.ai.overflow import ProviderError, classify, parse_retry_after
from heron.ai.providers import http


def status_error(exc: http.HttpStatusError) -> ProviderError:
    status = exc.status
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    text = error_message(body)
    if not text and isinstance(body, str):
        text = body.strip()[:2000]
    label = _error_label(body) or exc.reason or "error"
    kind = classify(status, f"{label} {text}" if text else "")
    message = f"{status} {label}: {text}" if text else f"{status} {label}"
    return ProviderError(message, status=status, retry_after=parse_retry_after(exc.headers), kind=kind)


def stream_error(body: Any) -> ProviderError:
    """An error object inside the event stream (OpenRouter, vLLM): no HTTP status."""
    text = error_message(body) or (body if isinstance(body, str) else json.dumps(body))
    label = _error_label(body)
    body_status = _status_from_body(body)
    message = f"{label}: {text}" if label else text
    if body_status is not None:
        message = f"{body_status} {message}"
    return ProviderError(message, status=body_status)


def error_message(body: Any) -> str:
    if not isinstance(body, dict):
        return ""
    inner = body.get("error")
    if isinstance(inner, dict):
        body = inner
    message = body.get("message")
    text = message if isinstance(message, str) else ""
    metadata = body.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if isinstance(raw, str) and raw and raw not in text:
        # OpenRouter: "Provider returned error" with the upstream's own text here.
        text = f"{text} ({raw[:1000]})" if text else raw[:1000]
    return text


def _error_label(body: Any) -> str:
    """``type (code)`` of an OpenAI-style error object, e.g. ``invalid_request_error
    (context_length_exceeded)``."""
    if not isinstance(body, dict):
        return ""
    inner = body.get("error")
    if isinstance(inner, dict):
        body = inner
    kind = body.get("type")
    code = body.get("code")
    kind = kind if isinstance(kind, str) else ""
    code = code if isinstance(code, str) else ""
    if kind and code and code != kind:
        return f"{kind} ({code})"
    return kind or code


def _status_from_body(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    code = body.get("code")
    if isinstance(code, int) and 400 <= code < 600:
        return code
    if isinstance(code, str) and code.isdigit() and 400 <= int(code) < 600:
        return int(code)
    label = f"{body.get('type')} {code}".lower()
    if "overloaded" in label:
        return 529
    return None
