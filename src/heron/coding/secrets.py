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

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heron.ai.models import ENV_API_KEYS

# A name matching one of these is a credential (case-insensitive).
SECRET_NAME_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r".*_API_KEY$",
        r"^API_KEY$",
        r".*_APIKEY$",
        r".*_TOKEN$",
        r"^TOKEN$",
        r".*_SECRET.*",
        r"^SECRET.*",
        r".*PASSWORD.*",
        r".*PASSWD.*",
        r".*_CREDENTIALS?$",
        r".*_PRIVATE_KEY$",
        r"^AWS_ACCESS_KEY_ID$",
        r"^AWS_SECRET_ACCESS_KEY$",
        r"^AWS_SESSION_TOKEN$",
        r"^AWS_SECURITY_TOKEN$",
        r"^HERON_API_KEY$",
    )
)

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def is_secret_name(name: str) -> bool:
    return any(pattern.match(name) for pattern in SECRET_NAME_PATTERNS)


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
