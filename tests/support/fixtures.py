"""Access to the shared conformance data (``../shared/fixtures`` beside the repository)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures"
STREAMS = FIXTURES / "provider-streams"


@cache
def manifest() -> list[dict[str, Any]]:
    data = json.loads((STREAMS / "manifest.json").read_text())
    streams: list[dict[str, Any]] = data["streams"]
    return streams


def streams_for(api: str) -> list[dict[str, Any]]:
    return [entry for entry in manifest() if entry["api"] == api]


def stream_name(entry: dict[str, Any]) -> str:
    return Path(entry["file"]).name.removesuffix(".sse")


def sse_body(entry: dict[str, Any]) -> bytes:
    return (STREAMS / entry["file"]).read_bytes()


def recorded_request(entry: dict[str, Any]) -> Any:
    if not entry.get("request_file"):
        return None
    return json.loads((STREAMS / entry["request_file"]).read_text())
