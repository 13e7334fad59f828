"""The environment a tool's child process gets: heron's own, minus its secrets.

heron runs with provider API keys in its environment. A bash child that inherits them
can print them (``env``) or send them anywhere (``curl -d "$OPENAI_API_KEY" ...``), and a
prompt injected into a file the model reads is enough to ask for that. So every child
gets the environment with the credentials removed:

* names that look like credentials: ``*_API_KEY``, ``*_TOKEN``, ``*_SECRET*``,
  ``*PASSWORD*``, ``*_CREDENTIALS``, ``*_PRIVATE_KEY``, and the AWS secret variables;
* every name heron itself reads keys from (each provider's key variables,
  ``HERON_API_KEY``);
* the variables ``models.json`` names as an ``apiKey`` or a header value;
* any variable whose value is one of the key values heron is using (a key passed with
  ``--api-key`` that also sits in some oddly named variable).

``env.passThrough`` in the user's (or the local, untracked) settings lists names to keep
anyway (``["GITHUB_TOKEN"]`` for a ``gh`` workflow). A project's shared settings file
cannot pass secrets through: it comes from the repository, which may not be the user's.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

from heron.ai.models import ENV_API_KEYS
from heron.ai.types import TextContent, ThinkingContent, ToolCall
from heron.coding.secret_names import is_secret_name

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def models_json_names(path: Path) -> set[str]:
    """Environment variable names a ``models.json`` uses as ``apiKey`` or header values.

    A value that is the name of a variable is resolved from the environment, so that
    variable holds a credential whatever it is called. An unreadable file names nothing
    (the model registry reports its problems)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    names: set[str] = set()

    def visit(entry: Any) -> None:
        if not isinstance(entry, dict):
            return
        values: list[Any] = [entry.get("apiKey")]
        headers = entry.get("headers")
        if isinstance(headers, dict):
            values.extend(headers.values())
        names.update(v for v in values if isinstance(v, str) and _ENV_NAME.match(v))
        models = entry.get("models")
        if isinstance(models, list):
            for model in models:
                visit(model)

    providers = data.get("providers") if isinstance(data, dict) else None
    if isinstance(providers, dict):
        for provider in providers.values():
            visit(provider)
    return names


@dataclass
class SecretPolicy:
    """Which variables a child process must not see."""

    extra_names: set[str] = field(default_factory=set)
    pass_through: set[str] = field(default_factory=set)
    secret_values: set[str] = field(default_factory=set)

    @classmethod
    def for_heron(
        cls, home: Path, pass_through: Iterable[str] = (), secret_values: Iterable[str | None] = ()
    ) -> SecretPolicy:
        names = {name for names in ENV_API_KEYS.values() for name in names}
        names |= models_json_names(home / "models.json")
        values = {v for v in secret_values if v and len(v) >= 8}  # a short value would match innocent ones
        return cls(extra_names=names, pass_through=set(pass_through), secret_values=values)

    def is_secret(self, name: str, value: str) -> bool:
        if name in self.pass_through:
            return False
        return name in self.extra_names or is_secret_name(name) or value in self.secret_values

    def child_environment(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """``environ`` (default: heron's own, read now) without the secrets."""
        source = os.environ if environ is None else environ
        return {name: value for name, value in source.items() if not self.is_secret(name, value)}

    def removed(self, environ: Mapping[str, str] | None = None) -> list[str]:
        """The names :meth:`child_environment` leaves out (for ``docs`` and diagnostics)."""
        source = os.environ if environ is None else environ
        return sorted(name for name, value in source.items() if self.is_secret(name, value))

    def redact(self, text: str) -> str:
        """``text`` with every known key value replaced (for results and errors)."""
        for value in self.secret_values:
            if value in text:
                text = text.replace(value, "[redacted]")
        return text


DEFAULT_POLICY = SecretPolicy()


def child_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment without credentials by name alone (a tool built without a runtime)."""
    return DEFAULT_POLICY.child_environment(environ)


# --- one redactor for everything heron writes ---------------------------------------------

MIN_SECRET_CHARS = 8  # shorter values would match innocent text ("test", a port number)
REDACTED = "[redacted]"


class Redactor:
    """Replaces the key values heron knows with ``[redacted]`` in any text it writes.

    One instance per process (:data:`REDACTOR`) collects the values: the key each session
    resolved, the values of the variables bash children do not get (provider key
    variables, credential-looking names, models.json-named variables) and literal keys in
    models.json. Every write boundary calls it: the session file writer (on each line),
    spill files (streamed, so a key split between two writes is still caught), the
    messages the model sees again, stdout/stderr of the print/json/rpc modes, log records
    and trace attributes (see docs/permissions.md, "Secrets").

    Values are only ever added: a key that was in use stays secret after a model switch.
    """

    def __init__(self) -> None:
        self._values: frozenset[str] = frozenset()
        self._forms: tuple[str, ...] = ()  # the values and their JSON-escaped forms, longest first
        self._bytes: tuple[bytes, ...] = ()
        self._encoded: tuple[str, ...] = ()  # the base64 forms, looked for again in wrapped lines

    def add(self, values: Iterable[str | None]) -> None:
        new = {v for v in values if v and len(v) >= MIN_SECRET_CHARS and not v.isspace()} - self._values
        if not new:
            return
        self._values = self._values | new
        forms = set(self._values)
        for value in self._values:
            forms |= encoded_forms(value)
        for form in list(forms):  # as it appears inside a JSON string (a session line, an event)
            forms.add(json.dumps(form)[1:-1])
            forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
        self._forms = tuple(sorted(forms, key=len, reverse=True))
        self._bytes = tuple(f.encode("utf-8", "surrogatepass") for f in self._forms)
        self._encoded = tuple(sorted({f for v in self._values for f in base64_forms(v)}, key=len, reverse=True))

    def __bool__(self) -> bool:
        return bool(self._values)

    @property
    def longest(self) -> int:
        """Bytes of the longest form (a streamed writer holds back one less than this)."""
        return max((len(b) for b in self._bytes), default=0)

    def text(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, REDACTED)
        if self._encoded and "\n" in text:
            text = _WRAPPED_BASE64.sub(self._wrapped, text)
        return text

    def _wrapped(self, match: re.Match[str]) -> str:
        """A run of base64 lines (``base64`` wraps at 76 columns) that holds a key once joined."""
        run = match.group(0)
        joined = run.replace("\n", "")
        return REDACTED + ("\n" if run.endswith("\n") else "") if any(f in joined for f in self._encoded) else run

    def data(self, data: bytes) -> bytes:
        for form in self._bytes:
            if form in data:
                data = data.replace(form, REDACTED.encode())
        return data

    def deep(self, value: Any) -> Any:
        """``value`` (JSON-like: dicts, lists, strings) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.deep(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.deep(v) for v in value]
        return value


REDACTOR = Redactor()

# Two or more lines of base64 alphabet, as `base64` and `openssl base64` wrap them. A match
# starts only where a run of the alphabet starts, and a line's run is never given back
# (``{16,}+``): without both, a long line of letters (a minified file, a 5 MB write) costs
# time quadratic in its length - hours, for every text heron writes while it knows a key.
_WRAPPED_BASE64 = re.compile(r"(?<![A-Za-z0-9+/=_-])(?:[A-Za-z0-9+/=_-]{16,}+\n){1,}[A-Za-z0-9+/=_-]{4,}+\n?")
MIN_ENCODED_CHARS = 12  # a shorter stable part of an encoding would match innocent text


def base64_forms(value: str) -> set[str]:
    """The parts of a base64 encoding that only ``value``'s bytes decide, at each of the three
    positions it can start at within a longer encoded text (``grep KEY .env | base64``),
    in the standard and the URL-safe alphabet."""
    raw = value.encode("utf-8", "surrogatepass")
    out: set[str] = set()
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + raw).decode("ascii")
        start = 4 if shift else 0  # the first group mixes in the bytes before the value
        stable = encoded[start : (shift + len(raw)) // 3 * 4]  # the last group may mix in what follows
        if len(stable) >= MIN_ENCODED_CHARS:
            out |= {stable, stable.replace("+", "-").replace("/", "_")}
    return out


def encoded_forms(value: str) -> set[str]:
    """``value`` as base64 (see :func:`base64_forms`), URL-encoded and as hex: the encodings
    a command can turn a key into without any tool that is not everywhere."""
    forms = base64_forms(value)
    for quoted in (quote(value, safe=""), quote_plus(value)):
        if quoted != value:
            forms.add(quoted)
    raw = value.encode("utf-8", "surrogatepass")
    forms |= {raw.hex(), raw.hex().upper()}
    return forms


def redact(text: str) -> str:
    """``text`` with every key value heron knows replaced (the process-wide redactor)."""
    return REDACTOR.text(text)


def models_json_literals(path: Path) -> set[str]:
    """Literal keys in ``models.json`` (``apiKey`` and header values that are neither the
    name of a variable nor a ``!command``): they are secrets as much as the variables."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return set()
    found = set(re.findall(r'"apiKey"\s*:\s*"([^"\\]+)"', text))
    return {v for v in found if not _ENV_NAME.match(v) and not v.startswith("!")}


# ``scheme://user:password@host``: the password part (a proxy or a base URL with credentials).
# The scheme is read from where its run of characters starts, never given back: linear in
# the text (a long word without ``://`` was quadratic). It may start with a digit - more
# text taken for a URL is only more redaction.
_URL_PASSWORD = re.compile(r"(?<![A-Za-z0-9+.-])[A-Za-z0-9+.-]++://[^\s/:@]*+:([^\s/@]+)@")


def url_passwords(text: str | None) -> set[str]:
    """The passwords written into URLs in ``text`` (``http://me:pw@proxy``)."""
    return set(_URL_PASSWORD.findall(text)) if text else set()


def known_secret_values(policy: SecretPolicy, home: Path, environ: Mapping[str, str] | None = None) -> set[str]:
    """The values :data:`REDACTOR` should know: the keys in use, the values of every
    variable bash children do not get, literal models.json keys, and the passwords of URLs
    in the environment and in models.json (a proxy, a base URL with credentials)."""
    source = os.environ if environ is None else environ
    values = set(policy.secret_values)
    values.update(value for name, value in source.items() if policy.is_secret(name, value))
    values |= models_json_literals(home / "models.json")
    for value in source.values():
        values |= url_passwords(value)
    with contextlib.suppress(OSError):
        values |= url_passwords((home / "models.json").read_text(encoding="utf-8"))
    return values


class RedactingFilter(logging.Filter):
    """Redacts a log record's final message (arguments merged in) and its traceback, so
    a handler prints no key whatever the format string was."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not REDACTOR:
            return True
        record.msg = REDACTOR.text(record.getMessage())
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = REDACTOR.text(record.exc_text)
        if record.stack_info:
            record.stack_info = REDACTOR.text(record.stack_info)
        return True


LOG_LEVEL_ENV = "HERON_LOG"


def install_log_redaction(environ: Mapping[str, str] | None = None) -> str | None:
    """Put :class:`RedactingFilter` on every handler a heron record can reach (the root
    logger's, the ``heron`` logger's and Python's last-resort stderr handler). With
    ``HERON_LOG=debug`` (or info, warning, error) heron's own records of that level and up
    go to stderr. Returns a problem with ``HERON_LOG`` to warn about, or None."""
    source = os.environ if environ is None else environ
    heron_logger = logging.getLogger("heron")
    problem = None
    wanted = source.get(LOG_LEVEL_ENV, "").strip()
    if wanted:
        level = logging.getLevelName(wanted.upper())
        if isinstance(level, int):
            if not any(getattr(h, "_heron_log", False) for h in heron_logger.handlers):
                stream = logging.StreamHandler()
                stream.setFormatter(logging.Formatter("heron %(levelname)s %(name)s: %(message)s"))
                stream._heron_log = True  # type: ignore[attr-defined]
                heron_logger.addHandler(stream)
            heron_logger.setLevel(level)
        else:
            problem = f"{LOG_LEVEL_ENV}={wanted}: not a log level (debug, info, warning, error)"
    handlers: list[logging.Handler] = [*logging.getLogger().handlers, *heron_logger.handlers]
    if logging.lastResort is not None:
        handlers.append(logging.lastResort)
    for handler in handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    return problem


def redact_message(message: Any, redactor: Redactor = REDACTOR) -> None:
    """Redact a message in place (text, reasoning, tool call arguments, error text,
    details). Done when the agent adds the message, before anything records it, so the
    live process keeps sending exactly what a resumed one reads from the session file."""
    if not redactor:
        return
    content = getattr(message, "content", None)
    if isinstance(content, str):
        message.content = redactor.text(content)
    elif isinstance(content, list):
        for block in content:
            if isinstance(block, TextContent):
                block.text = redactor.text(block.text)
            elif isinstance(block, ThinkingContent) and not block.redacted:
                block.thinking = redactor.text(block.thinking)
            elif isinstance(block, ToolCall):
                block.arguments = redactor.deep(block.arguments)
                if block.raw_arguments is not None:
                    block.raw_arguments = redactor.text(block.raw_arguments)
    for name in ("error_message", "summary", "command", "output"):
        value = getattr(message, name, None)
        if isinstance(value, str):
            setattr(message, name, redactor.text(value))
    details = getattr(message, "details", None)
    if isinstance(details, dict | list | str):
        message.details = redactor.deep(details)
