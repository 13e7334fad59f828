"""Access to the shared conformance data (``../shared/fixtures`` beside the repository).

The data lives outside the repository, so a checkout may not have it. ``HERON_SHARED``
points at another copy (or at nothing, to check the suite without it). Tests that need
it are marked with :func:`needs_shared` or parametrized with :func:`stream_params`, and
skip with a reason naming the missing path; every other test still runs.
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("HERON_SHARED") or REPO.parent / "shared")
FIXTURES = SHARED / "fixtures"
STREAMS = FIXTURES / "provider-streams"
MANIFEST = STREAMS / "manifest.json"


def missing_reason(*paths: Path) -> str | None:
    """Why a test needing ``paths`` cannot run, or None when they all exist."""
    for path in paths:
        if not path.exists():
            return (
                f"shared fixture missing: {path} (check out the shared data beside the repository, "
                "or point HERON_SHARED at it)"
            )
    return None


def needs_shared(*paths: Path) -> pytest.MarkDecorator:
    """Skip the test (or, as ``pytestmark``, the module) when a shared path is absent."""
    reason = missing_reason(*paths)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


@cache
def manifest() -> list[dict[str, Any]]:
    """The recorded streams; empty when the shared data is absent (the tests that use
    them are skipped through :func:`stream_params` / :func:`needs_shared`)."""
    if not MANIFEST.is_file():
        return []
    data = json.loads(MANIFEST.read_text())
    streams: list[dict[str, Any]] = data["streams"]
    return streams


def streams_for(api: str) -> list[dict[str, Any]]:
    return [entry for entry in manifest() if entry["api"] == api]


def stream_params(api: str) -> list[Any]:
    """Parameters for a test run once per recorded stream of ``api``; without the shared
    data, one skipped parameter whose reason names the missing manifest."""
    reason = missing_reason(MANIFEST)
    if reason is not None:
        return [pytest.param(None, id="no-shared-fixtures", marks=pytest.mark.skip(reason=reason))]
    return [pytest.param(entry, id=stream_name(entry)) for entry in streams_for(api)]


def stream_name(entry: dict[str, Any]) -> str:
    return Path(entry["file"]).name.removesuffix(".sse")


def sse_body(entry: dict[str, Any]) -> bytes:
    return (STREAMS / entry["file"]).read_bytes()


def recorded_request(entry: dict[str, Any]) -> Any:
    if not entry.get("request_file"):
        return None
    return json.loads((STREAMS / entry["request_file"]).read_text())
