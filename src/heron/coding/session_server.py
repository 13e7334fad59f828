"""The server a session talks to, remembered in the session file.

A session started with ``--base-url http://localhost:8080/v1 --model local`` is resumed
with ``heron --continue``: without the server's address the resumed run would pick
another model (or none, and exit 3). So before its first request a session appends a
``custom`` entry of type ``heron.server`` - provider, model id, wire API and base URL,
never a key - and appends another whenever the model changes. Resuming (``--continue``,
``--resume``, ``--session``) without ``--model`` or ``--base-url`` uses the latest one on
the path; either flag overrides it (docs/sessions.md, "Resuming").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heron.ai.types import Model
from heron.session.entries import CustomEntry

if TYPE_CHECKING:
    from heron.ai.models import ModelRegistry
    from heron.session.store import SessionStore

SERVER_CUSTOM_TYPE = "heron.server"


@dataclass(frozen=True, slots=True)
class RecordedServer:
    """The server a session's model is asked on, recorded in the session so that a resumed
    run without ``--model`` or ``--base-url`` talks to the same server (module docstring)."""

    provider: str
    model: str
    api: str
    base_url: str | None

    @classmethod
    def of(cls, model: Model) -> RecordedServer:
        return cls(model.provider, model.id, model.api, model.base_url)

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "model": self.model, "api": self.api, "baseUrl": self.base_url}

    @classmethod
    def from_json(cls, data: Any) -> RecordedServer | None:
        if not isinstance(data, dict):
            return None
        provider, model, api, base = (data.get(k) for k in ("provider", "model", "api", "baseUrl"))
        if not (isinstance(provider, str) and isinstance(model, str) and isinstance(api, str)):
            return None
        return cls(provider, model, api, base if isinstance(base, str) and base else None)


def recorded_server(store: SessionStore) -> RecordedServer | None:
    """The latest server recorded on the session's current path, if any."""
    leaf = store.leaf_id
    if leaf is None:
        return None
    ids, types = store.lineage(leaf)
    for entry_id, kind in zip(reversed(ids), reversed(types), strict=True):
        if kind != "custom":
            continue
        entry = store.get(entry_id)
        if isinstance(entry, CustomEntry) and entry.custom_type == SERVER_CUSTOM_TYPE:
            found = RecordedServer.from_json(entry.data)
            if found is not None:
                return found
    return None


class ServerRecorder:
    """Appends the session's server when it is not the one the path already records."""

    def __init__(self) -> None:
        self._last: RecordedServer | None = None
        self._store: SessionStore | None = None

    def record(self, store: SessionStore, model: Model) -> None:
        current = RecordedServer.of(model)
        if store is not self._store:
            self._store, self._last = store, recorded_server(store)
        if current != self._last:
            store.append_custom(SERVER_CUSTOM_TYPE, current.to_json())
            self._last = current


def model_ref(server: RecordedServer, registry: ModelRegistry) -> tuple[str, str | None, str | None]:
    """``(--model, --base-url, --api)`` that choose the recorded server again: the
    catalogue's (or models.json's) model by ``provider/id`` when it still has that
    address, else the id pointed at the recorded base URL, with the recorded API."""
    known = registry.get(server.provider, server.model)
    if known is not None and known.base_url == server.base_url:
        return f"{server.provider}/{server.model}", None, server.api if server.api != known.api else None
    if known is not None:
        return f"{server.provider}/{server.model}", server.base_url, server.api
    return server.model, server.base_url, server.api
