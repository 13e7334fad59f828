"""Which environment variable names hold credentials: the one rule, on its own.

The rule is needed at the very start of the ``heron`` command, before anything else is
imported (:mod:`heron.cli.proc_scrub` clears credentials from the process's own
environment block), so it lives apart from the redaction machinery of
:mod:`heron.coding.secrets`, which loads the LLM layer's types; that module re-exports it.
"""

from __future__ import annotations

import re

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
        r"^AWS_BEARER_TOKEN_.*",  # Bedrock API keys (AWS_BEARER_TOKEN_BEDROCK)
        r".*_AUTHTOKEN$",  # npm's npm_config__authToken, NGROK_AUTHTOKEN
        r"^DOCKER_AUTH_CONFIG$",  # registry credentials as JSON
        r"^HERON_API_KEY$",
    )
)


def is_secret_name(name: str) -> bool:
    return any(pattern.match(name) for pattern in SECRET_NAME_PATTERNS)
