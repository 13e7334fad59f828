"""pi 1.6.0 beside heron: where to find it and how to point it at a local scripted server.

The issues state heron's goals as ratios to pi 1.6.0 (npm ``@earendil-works/pi-coding-agent``),
measured in the same run on the same machine. ``.ci/run`` installs pi and a Node 22 under
``.ci/.node`` (the tests find them through ``HERON_CI_NODE_DIR``); a benchmark that compares
against pi calls :func:`pi_command` and prints "pi: not installed" in pi's columns when it
returns ``None``, so every benchmark still runs where pi is missing.

:func:`pi_env` gives pi an agent directory of its own (``PI_CODING_AGENT_DIR``) holding a
``models.json`` with one provider at the server's URL, and switches off everything pi would
otherwise do on the network at start (catalogue refresh, version check, telemetry).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROVIDER = "local"
PI_VERSION = "1.6.0"
NOT_INSTALLED = "pi: not installed"


def node_dir() -> Path:
    return Path(os.environ.get("HERON_CI_NODE_DIR", ROOT / ".ci" / ".node"))


def pi_command() -> list[str] | None:
    """The command that runs pi (with the Node installed beside it), or ``None``."""
    bin_dir = node_dir() / "node_modules" / ".bin"
    node, pi = bin_dir / "node", bin_dir / "pi"
    if not pi.exists():
        return None
    entry = pi.resolve()
    return [str(node), str(entry)] if node.exists() else [str(entry)]


def pi_env(
    agent_dir: Path,
    base_url: str,
    *,
    api: str = "openai-completions",
    model_id: str = "big",
    context_window: int = 128_000,
    max_tokens: int = 4_096,
    settings: dict[str, object] | None = None,
) -> dict[str, str]:
    """The environment for a pi process that talks to ``base_url`` only.

    ``api`` is pi's name for the wire ("openai-completions", "anthropic-messages",
    "openai-responses"); the model is ``local/<model_id>``.
    """
    agent_dir.mkdir(parents=True, exist_ok=True)
    models = {
        "providers": {
            PROVIDER: {
                "baseUrl": base_url,
                "api": api,
                "apiKey": "bench-key",
                "models": [{"id": model_id, "contextWindow": context_window, "maxTokens": max_tokens}],
            }
        }
    }
    (agent_dir / "models.json").write_text(json.dumps(models, indent=2))
    (agent_dir / "settings.json").write_text(json.dumps(settings or {}, indent=2))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        {
            "PI_CODING_AGENT_DIR": str(agent_dir),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }
    )
    return env


def pi_model(model_id: str = "big") -> str:
    return f"{PROVIDER}/{model_id}"
