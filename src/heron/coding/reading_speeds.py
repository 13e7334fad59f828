"""How fast each local server reads a prompt, remembered across processes.

heron waits for a local server that is still reading a long prompt as long as the prompt
needs at the server's speed (:mod:`heron.ai.reading`). Each answer measures that speed;
the measurements are kept in ``$HERON_HOME/cache/reading-speeds.json`` per server (its
base URL without credentials) and model, so the next process - a ``heron -p --continue``
per turn - waits as long as the one before learned it must. The last
:data:`KEEP_SAMPLES` samples younger than :data:`MAX_AGE_SECONDS` are kept, and the
slowest of them is the speed used: a wait too long only matters when a server has really
stopped, one too short fails a request the server is working on.

The file holds no credential and is private (0600), like everything under ``$HERON_HOME``.
A file that cannot be read or written costs only the measurement.
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from heron.ai.providers.http import without_userinfo
from heron.ai.reading import ReadingSample
from heron.ai.types import Model
from heron.session.private_files import write_private_text

CACHE_FILE = Path("cache") / "reading-speeds.json"
KEEP_SAMPLES = 8
MAX_AGE_SECONDS = 30 * 24 * 3600


def server_key(model: Model) -> str:
    """The server and model a speed belongs to: the base URL without its ``user:password@``
    (no cache holds a credential), as every cache of a server's answers keys it."""
    return f"{without_userinfo(model.base_url or '').rstrip('/')} {model.id}"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _samples(entry: Any, now: float) -> list[tuple[float, float, float]]:
    """(tokens, seconds, when) of an entry's samples that are well formed and young enough."""
    out: list[tuple[float, float, float]] = []
    for item in entry if isinstance(entry, list) else []:
        if not (isinstance(item, list) and len(item) == 3):
            continue
        tokens, seconds, at = item
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in item)
        if numbers and tokens > 0 and seconds > 0 and 0 <= now - at < MAX_AGE_SECONDS:
            out.append((float(tokens), float(seconds), float(at)))
    return out[-KEEP_SAMPLES:]


def measured_speed(home: Path, model: Model, now: float | None = None) -> float | None:
    """The slowest recent reading speed of ``model``'s server (tokens per second), or None."""
    current = time.time() if now is None else now
    samples = _samples(_read(home / CACHE_FILE).get(server_key(model)), current)
    return min((tokens / seconds for tokens, seconds, _ in samples), default=None)


def record_sample(home: Path, model: Model, sample: ReadingSample, now: float | None = None) -> None:
    """Add one measurement (the oldest beyond :data:`KEEP_SAMPLES` go)."""
    current = time.time() if now is None else now
    path = home / CACHE_FILE
    data = {key: [list(s) for s in _samples(value, current)] for key, value in _read(path).items()}
    data = {key: value for key, value in data.items() if value}
    key = server_key(model)
    kept = [*data.get(key, []), [sample.tokens, round(sample.seconds, 3), round(current, 3)]]
    data[key] = kept[-KEEP_SAMPLES:]
    with contextlib.suppress(OSError):
        write_private_text(path, json.dumps(data, indent=1))
