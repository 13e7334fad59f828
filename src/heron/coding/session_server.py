"""The server a session talks to, remembered in the session file.

A session started with ``--base-url http://localhost:8080/v1 --model local`` is resumed
with ``heron --continue``: without the server's address the resumed run would pick
another model (or none, and exit 3). So before its first request a session appends a
``custom`` entry of type ``heron.server`` - provider, model id, wire API and base URL,
never a key - and appends another whenever the model changes. Resuming (``--continue``,
``--resume``, ``--session``) without ``--model`` or ``--base-url`` uses the latest one on
the path; either flag overrides it (docs/sessions.md, "Resuming").

A base URL's password (``http://me:pw@host/v1``) is a credential: it is never recorded.
The entry keeps the URL without it and says that it had one (``urlPassword``); resuming
takes the password from models.json when a model there has that id and address, else
asks for ``--base-url`` again (:class:`CredentialsNeeded`) - never the redacted text a
file would show in its place.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heron.ai.providers.http import without_password
from heron.ai.types import Model
from heron.coding.model_choice import SetupError
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
    base_url: str | None  # without a password
    url_password: bool = False  # the URL had one, not recorded: it must come from elsewhere

    @classmethod
    def of(cls, model: Model) -> RecordedServer:
        return cls.with_url(model.provider, model.id, model.api, model.base_url)

    @classmethod
    def with_url(
        cls, provider: str, model: str, api: str, base_url: str | None, url_password: bool = False
    ) -> RecordedServer:
        """The entry for ``base_url`` with its password taken out (an older file's
        ``me:[redacted]@`` counts as one)."""
        if base_url is None:
            return cls(provider, model, api, None)
        base, had = without_password(base_url)
        return cls(provider, model, api, base, url_password or had)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"provider": self.provider, "model": self.model, "api": self.api}
        data["baseUrl"] = self.base_url
        if self.url_password:
            data["urlPassword"] = True
        return data

    @classmethod
    def from_json(cls, data: Any) -> RecordedServer | None:
        if not isinstance(data, dict):
            return None
        provider, model, api, base = (data.get(k) for k in ("provider", "model", "api", "baseUrl"))
        if not (isinstance(provider, str) and isinstance(model, str) and isinstance(api, str)):
            return None
        url = base if isinstance(base, str) and base else None
        return cls.with_url(provider, model, api, url, data.get("urlPassword") is True)


class CredentialsNeeded(SetupError):
    """The recorded server's URL had a password, which no file holds, and models.json
    does not give it: the user must name the server again."""

    def __init__(self, server: RecordedServer) -> None:
        base = server.base_url or ""
        scheme, _, rest = base.partition("://")
        netloc, slash, path = rest.partition("/")
        user, _, host = netloc.rpartition("@")
        example = f"{scheme}://{user or 'USER'}:PASSWORD@{host}{slash}{path}"
        super().__init__(
            f"this session's server {base} needs the password of its URL, which heron does not store. "
            f"Give it again: heron --continue --base-url {example} --model {server.model} "
            '(or describe the server in models.json with its "baseUrl", and use --model provider/id)'
        )


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
    address, else the id pointed at the recorded base URL, with the recorded API. A URL
    that had a password is only ever a models.json model's that has it; else
    :class:`CredentialsNeeded` (module docstring)."""
    known = registry.get(server.provider, server.model)
    if known is not None and _same_address(known, server):
        return f"{server.provider}/{server.model}", None, server.api if server.api != known.api else None
    if server.url_password:
        # the password is models.json's when a model there has this id and address
        found = next((m for m in registry.all() if m.id == server.model and _same_address(m, server)), None)
        if found is None or not without_password(found.base_url or "")[1]:
            raise CredentialsNeeded(server)
        return found.ref, None, server.api if server.api != found.api else None
    if known is not None:
        return f"{server.provider}/{server.model}", server.base_url, server.api
    return server.model, server.base_url, server.api


def _same_address(model: Model, server: RecordedServer) -> bool:
    """``model`` is served at the recorded address (the password aside, never recorded)."""
    if model.base_url is None:
        return server.base_url is None
    base, had = without_password(model.base_url)
    return base == server.base_url and had == server.url_password
