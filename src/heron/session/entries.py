"""Session entries: pi's version-3 JSONL format (docs/sessions.md), and migration of older files.

One line per entry. On disk the field names are pi's camelCase and every entry starts
``{"type":...,"id":...,"parentId":...,"timestamp":...`` (the store's fast indexer relies on
that order); in Python they are snake_case attributes. Fields a class does not know are
kept in ``extra`` and an entry of a type this heron does not know is kept whole
(:class:`UnknownEntry`), so rewriting a file (migration, fork) loses nothing.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar, NamedTuple

from heron.agent.messages import AgentMessage, OpaqueMessage, agent_message_from_json
from heron.ai.types import JSON, ImageContent, TextContent, block_from_json
from heron.session.jsonl import dumps_line as dumps_line

CURRENT_VERSION = 3

# The fields every entry carries, in the order pi writes them.
COMMON_FIELDS = frozenset({"type", "id", "parentId", "timestamp"})


class ModelRef(NamedTuple):
    """A model as a session records it: ``provider`` and model id."""

    provider: str
    model_id: str

    def __str__(self) -> str:
        return f"{self.provider}/{self.model_id}"


# --- time and ids -------------------------------------------------------------------


def iso_now() -> str:
    """UTC now as pi writes it: ``2025-12-09T00:53:29.825Z`` (milliseconds, ``Z``)."""
    now_ms = time.time_ns() // 1_000_000
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now_ms // 1000)) + f".{now_ms % 1000:03d}Z"


def format_iso(moment: datetime) -> str:
    moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def iso_to_ms(value: str) -> int:
    """Milliseconds since the epoch of an ISO timestamp; 0 when it cannot be read."""
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except (ValueError, AttributeError):
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def new_entry_id(taken: Container[str]) -> str:
    """8 lowercase hex characters, not in ``taken`` (pi: the first 8 chars of a uuid)."""
    while True:
        candidate = os.urandom(4).hex()
        if candidate not in taken:
            return candidate


def new_session_id() -> str:
    """A random version-4 UUID in its text form (``xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx``), as
    ``str(uuid.uuid4())`` gives it: made here because importing ``uuid`` runs ``platform``
    (and compiles its regexes), 5-15 ms of every start (docs/benchmarks.md, "The command").
    Ids come from ``os.urandom`` directly, as ``uuid`` and ``secrets`` take them, without
    importing ``secrets`` (and ``hmac`` with it)."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def is_entry_id(value: object) -> bool:
    """Whether ``value`` has the shape pi gives ids (8 hex chars)."""
    return isinstance(value, str) and len(value) == 8 and all(c in "0123456789abcdef" for c in value)


# --- header -------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class SessionHeader:
    """Line 1 of a session file. Version-1 headers also carry ``provider``, ``modelId``
    and ``thinkingLevel`` (the session's settings at creation); they stay in ``extra`` and
    are read through :attr:`legacy_model` / :attr:`legacy_thinking_level`."""

    id: str
    timestamp: str
    cwd: str
    version: int = CURRENT_VERSION
    parent_session: str | None = None
    extra: JSON = field(default_factory=dict)
    type: ClassVar[str] = "session"

    _KNOWN: ClassVar[frozenset[str]] = frozenset({"type", "version", "id", "timestamp", "cwd", "parentSession"})

    @property
    def legacy_model(self) -> ModelRef | None:
        provider, model_id = self.extra.get("provider"), self.extra.get("modelId")
        if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
            return ModelRef(provider, model_id)
        return None

    @property
    def legacy_thinking_level(self) -> str | None:
        level = self.extra.get("thinkingLevel")
        return level if isinstance(level, str) and level else None

    def to_json_dict(self) -> JSON:
        out: JSON = {
            "type": "session",
            "version": self.version,
            "id": self.id,
            "timestamp": self.timestamp,
            "cwd": self.cwd,
        }
        if self.parent_session is not None:
            out["parentSession"] = self.parent_session
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    @classmethod
    def from_json_dict(cls, data: JSON) -> SessionHeader:
        if not isinstance(data, dict) or data.get("type") != "session":
            raise ValueError("not a session header")
        version = data.get("version")
        parent = data.get("parentSession")
        return cls(
            id=str(data.get("id") or ""),
            timestamp=str(data.get("timestamp") or ""),
            cwd=str(data.get("cwd") or ""),
            version=version if isinstance(version, int) and not isinstance(version, bool) else 1,
            parent_session=parent if isinstance(parent, str) else None,
            extra={k: v for k, v in data.items() if k not in cls._KNOWN},
        )


# --- entries ------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class EntryBase:
    """What every entry has. ``id`` and ``parent_id`` are filled by the store on append
    when left empty; ``timestamp`` too (ISO, milliseconds)."""

    id: str = ""
    parent_id: str | None = None
    timestamp: str = ""
    extra: JSON = field(default_factory=dict)

    TYPE: ClassVar[str] = ""
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS

    @property
    def type(self) -> str:
        return self.TYPE

    def to_json_dict(self) -> JSON:
        out: JSON = {"type": self.type, "id": self.id, "parentId": self.parent_id, "timestamp": self.timestamp}
        self._put_fields(out)
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def _put_fields(self, out: JSON) -> None:
        return None

    @staticmethod
    def _common(data: JSON, known: frozenset[str]) -> dict[str, Any]:
        parent = data.get("parentId")
        return {
            "id": str(data.get("id") or ""),
            "parent_id": parent if isinstance(parent, str) else None,
            "timestamp": str(data.get("timestamp") or ""),
            "extra": {k: v for k, v in data.items() if k not in known},
        }


def _put(out: JSON, key: str, value: Any) -> None:
    if value is not None:
        out[key] = value


@dataclass(slots=True, kw_only=True)
class MessageEntry(EntryBase):
    """An agent message (user, assistant, toolResult, bashExecution, custom, ...). A message
    this heron cannot decode is kept as an :class:`OpaqueMessage` (stored, never sent)."""

    message: AgentMessage
    TYPE: ClassVar[str] = "message"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"message"}

    def _put_fields(self, out: JSON) -> None:
        out["message"] = self.message.to_json_dict()

    @classmethod
    def from_json_dict(cls, data: JSON) -> MessageEntry:
        raw = data.get("message")
        if not isinstance(raw, dict):
            raise ValueError("message entry without a message object")
        try:
            message = agent_message_from_json(raw)
        except ValueError:
            message = OpaqueMessage(raw=dict(raw))
        return cls(message=message, **cls._common(data, cls._KNOWN))


@dataclass(slots=True, kw_only=True)
class ModelChangeEntry(EntryBase):
    """The session switched model; the entry keeps the choice so ``--continue`` resumes with
    the same model."""

    provider: str
    model_id: str
    TYPE: ClassVar[str] = "model_change"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"provider", "modelId"}

    @property
    def model(self) -> ModelRef:
        return ModelRef(self.provider, self.model_id)

    def _put_fields(self, out: JSON) -> None:
        out["provider"] = self.provider
        out["modelId"] = self.model_id

    @classmethod
    def from_json_dict(cls, data: JSON) -> ModelChangeEntry:
        return cls(
            provider=str(data.get("provider") or ""),
            model_id=str(data.get("modelId") or ""),
            **cls._common(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class ThinkingLevelChangeEntry(EntryBase):
    """The session switched thinking level; kept so ``--continue`` resumes with the same level."""

    thinking_level: str
    TYPE: ClassVar[str] = "thinking_level_change"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"thinkingLevel"}

    def _put_fields(self, out: JSON) -> None:
        out["thinkingLevel"] = self.thinking_level

    @classmethod
    def from_json_dict(cls, data: JSON) -> ThinkingLevelChangeEntry:
        return cls(thinking_level=str(data.get("thinkingLevel") or "off"), **cls._common(data, cls._KNOWN))


@dataclass(slots=True, kw_only=True)
class CompactionEntry(EntryBase):
    """History before ``first_kept_entry_id`` replaced by ``summary`` (docs/context.md)."""

    summary: str
    first_kept_entry_id: str
    tokens_before: int = 0
    details: Any = None
    from_hook: bool | None = None
    TYPE: ClassVar[str] = "compaction"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {
        "summary",
        "firstKeptEntryId",
        "tokensBefore",
        "details",
        "fromHook",
    }

    def _put_fields(self, out: JSON) -> None:
        out["summary"] = self.summary
        out["firstKeptEntryId"] = self.first_kept_entry_id
        out["tokensBefore"] = self.tokens_before
        _put(out, "details", self.details)
        _put(out, "fromHook", self.from_hook)

    @classmethod
    def from_json_dict(cls, data: JSON) -> CompactionEntry:
        tokens = data.get("tokensBefore")
        hook = data.get("fromHook")
        return cls(
            summary=str(data.get("summary") or ""),
            first_kept_entry_id=str(data.get("firstKeptEntryId") or ""),
            tokens_before=int(tokens) if isinstance(tokens, int | float) else 0,
            details=data.get("details"),
            from_hook=hook if isinstance(hook, bool) else None,
            **cls._common(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class BranchSummaryEntry(EntryBase):
    """A summary of the branch left behind, attached at the new position."""

    from_id: str | None
    summary: str
    details: Any = None
    from_hook: bool | None = None
    TYPE: ClassVar[str] = "branch_summary"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"fromId", "summary", "details", "fromHook"}

    def _put_fields(self, out: JSON) -> None:
        out["fromId"] = self.from_id
        out["summary"] = self.summary
        _put(out, "details", self.details)
        _put(out, "fromHook", self.from_hook)

    @classmethod
    def from_json_dict(cls, data: JSON) -> BranchSummaryEntry:
        from_id = data.get("fromId")
        hook = data.get("fromHook")
        return cls(
            from_id=from_id if isinstance(from_id, str) else None,
            summary=str(data.get("summary") or ""),
            details=data.get("details"),
            from_hook=hook if isinstance(hook, bool) else None,
            **cls._common(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class CustomEntry(EntryBase):
    """Extension state: stored, never in the context."""

    custom_type: str
    data: Any = None
    TYPE: ClassVar[str] = "custom"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"customType", "data"}

    def _put_fields(self, out: JSON) -> None:
        out["customType"] = self.custom_type
        _put(out, "data", self.data)

    @classmethod
    def from_json_dict(cls, data: JSON) -> CustomEntry:
        return cls(
            custom_type=str(data.get("customType") or ""), data=data.get("data"), **cls._common(data, cls._KNOWN)
        )


@dataclass(slots=True, kw_only=True)
class CustomMessageEntry(EntryBase):
    """An extension's message: in the context as an :class:`ExtensionMessage` (a user
    message for the model), shown in the UI when ``display``."""

    custom_type: str
    content: str | list[TextContent | ImageContent]
    display: bool = True
    details: Any = None
    TYPE: ClassVar[str] = "custom_message"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"customType", "content", "display", "details"}

    def _put_fields(self, out: JSON) -> None:
        out["customType"] = self.custom_type
        out["content"] = self.content if isinstance(self.content, str) else [b.to_json_dict() for b in self.content]
        out["display"] = self.display
        _put(out, "details", self.details)

    @classmethod
    def from_json_dict(cls, data: JSON) -> CustomMessageEntry:
        raw = data.get("content", "")
        content: str | list[TextContent | ImageContent]
        if isinstance(raw, str):
            content = raw
        elif isinstance(raw, list):
            content = []
            for item in raw:
                block = block_from_json(item)
                if isinstance(block, TextContent | ImageContent):
                    content.append(block)
        else:
            raise ValueError("custom_message content must be a string or a list of blocks")
        return cls(
            custom_type=str(data.get("customType") or ""),
            content=content,
            display=bool(data.get("display", True)),
            details=data.get("details"),
            **cls._common(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class LabelEntry(EntryBase):
    """Names ``target_id``; the latest label entry for a target wins, ``label=None`` clears."""

    target_id: str
    label: str | None = None
    TYPE: ClassVar[str] = "label"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"targetId", "label"}

    def _put_fields(self, out: JSON) -> None:
        out["targetId"] = self.target_id
        _put(out, "label", self.label)

    @classmethod
    def from_json_dict(cls, data: JSON) -> LabelEntry:
        label = data.get("label")
        return cls(
            target_id=str(data.get("targetId") or ""),
            label=label if isinstance(label, str) and label else None,
            **cls._common(data, cls._KNOWN),
        )


@dataclass(slots=True, kw_only=True)
class SessionInfoEntry(EntryBase):
    """The session's display name; the latest one wins."""

    name: str | None = None
    TYPE: ClassVar[str] = "session_info"
    _KNOWN: ClassVar[frozenset[str]] = COMMON_FIELDS | {"name"}

    def _put_fields(self, out: JSON) -> None:
        _put(out, "name", self.name)

    @classmethod
    def from_json_dict(cls, data: JSON) -> SessionInfoEntry:
        name = data.get("name")
        return cls(name=name if isinstance(name, str) and name else None, **cls._common(data, cls._KNOWN))


@dataclass(slots=True, kw_only=True)
class UnknownEntry(EntryBase):
    """An entry type this heron does not know: every field kept in ``extra``, written back
    as it was (with ``id`` / ``parentId`` as the tree has them)."""

    entry_type: str

    @property
    def type(self) -> str:
        return self.entry_type

    @classmethod
    def from_json_dict(cls, data: JSON) -> UnknownEntry:
        return cls(entry_type=str(data.get("type")), **cls._common(data, COMMON_FIELDS))


Entry = (
    MessageEntry
    | ModelChangeEntry
    | ThinkingLevelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UnknownEntry
)

ENTRY_CLASSES: dict[str, Callable[[JSON], Entry]] = {
    "message": MessageEntry.from_json_dict,
    "model_change": ModelChangeEntry.from_json_dict,
    "thinking_level_change": ThinkingLevelChangeEntry.from_json_dict,
    "compaction": CompactionEntry.from_json_dict,
    "branch_summary": BranchSummaryEntry.from_json_dict,
    "custom": CustomEntry.from_json_dict,
    "custom_message": CustomMessageEntry.from_json_dict,
    "label": LabelEntry.from_json_dict,
    "session_info": SessionInfoEntry.from_json_dict,
}


def entry_from_json(data: JSON) -> Entry:
    """Decode one entry; raises ``ValueError`` on anything malformed. Unknown types give
    an :class:`UnknownEntry`."""
    if not isinstance(data, dict):
        raise ValueError("an entry must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str) or not kind:
        raise ValueError("entry without a type")
    if kind == "session":
        raise ValueError("a session header where an entry was expected")
    decode = ENTRY_CLASSES.get(kind)
    if decode is None:
        return UnknownEntry.from_json_dict(data)
    try:
        return decode(data)
    except (TypeError, KeyError, AttributeError, ValueError) as exc:
        raise ValueError(f"malformed {kind} entry: {exc}") from exc


# --- migration ----------------------------------------------------------------------


def migrate(header: JSON, entries: list[JSON], lines: list[int] | None = None) -> list[str]:
    """Bring ``header`` and ``entries`` (dicts, in file order, without the header) to the
    current version, in place. Returns warnings.

    v1 -> v2: every entry gets an id and ``parentId`` is chained in file order; a
    compaction's ``firstKeptEntryIndex`` (an index into the file's entry list *including*
    the header, i.e. a 0-based line number) becomes ``firstKeptEntryId``. ``lines`` gives
    each entry's 0-based line number when some lines of the file could not be read (so
    the index still finds the right entry); by default entry ``i`` is on line ``i + 1``.
    v2 -> v3: the ``hookMessage`` role was renamed ``custom``.
    """
    warnings: list[str] = []
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        version = 1
    if version < 2:
        taken: set[str] = set()
        by_line: dict[int, JSON] = {}
        previous: str | None = None
        for position, entry in enumerate(entries):
            line = lines[position] if lines is not None else position + 1
            by_line[line] = entry
            entry_id = new_entry_id(taken)
            taken.add(entry_id)
            _set_id_and_parent(entry, entry_id, previous)
            previous = entry_id
            if entry.get("type") == "compaction" and "firstKeptEntryIndex" in entry:
                index = entry.pop("firstKeptEntryIndex")
                target = by_line.get(index) if isinstance(index, int) else None
                if target is None or target is entry:
                    warnings.append(
                        f"line {line + 1}: compaction firstKeptEntryIndex {index!r} does not name an earlier entry"
                    )
                    entry.setdefault("firstKeptEntryId", "")
                else:
                    entry["firstKeptEntryId"] = target["id"]
        version = 2
    if version < 3:
        for entry in entries:
            message = entry.get("message")
            if entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
        version = 3
    header["version"] = max(version, _as_int(header.get("version")))
    return warnings


def _as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _set_id_and_parent(entry: JSON, entry_id: str, parent: str | None) -> None:
    """Put ``id`` / ``parentId`` right after ``type``, where pi writes them."""
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId")}
    kind = entry.get("type")
    entry.clear()
    entry["type"] = kind
    entry["id"] = entry_id
    entry["parentId"] = parent
    entry.update(rest)


def starts_file(entry_type: str) -> bool:
    """Whether an entry of this type makes a new session write its file: the first message
    (the user's prompt, before its request is sent) does; settings, labels and ledger
    records alone do not, so starting heron and quitting leaves no file behind."""
    return entry_type == "message"
