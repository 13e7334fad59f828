"""The warm-up a waiting session runs before its first prompt (heron.coding.warm_up): in a fresh
interpreter, what the first turn would import on its critical path is loaded by it instead,
the tools' parameter models too (the first tool call validates with them; building the
session loads none), and a session that takes no snapshots loads no checkpoint code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = r"""
import json, os, sys
from pathlib import Path
from heron.ai.types import Model
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.coding.warm_up import warm_up
from heron.session.store import SessionStore

project, home = Path(os.environ["PROBE_PROJECT"]), Path(os.environ["HERON_HOME"])
in_memory = os.environ["PROBE_STORE"] == "memory"
store = SessionStore.in_memory(project) if in_memory else SessionStore.create(project, home=home)
model = Model(id="m", name="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
session = CodingSession(cwd=project, model=model, store=store, home=home, settings=settings_from_dict({}))
watched = json.loads(os.environ["PROBE_WATCHED"])
before = sorted(name for name in watched if name in sys.modules)
warm_up("openai-chat", session)
after = sorted(name for name in watched if name in sys.modules)
print(json.dumps({"before": before, "after": after}))
"""

PROVIDER = "heron.ai.providers.openai_chat"
TRANSPORT = "httpcore._backends.anyio"  # what httpx loads on its first connection, not at import
SNAPSHOT = ("heron.coding.checkpoints.repo", "heron.coding.checkpoints.git_backend")
EXECUTOR = "concurrent.futures.thread"
MODELS = "heron.coding.tools.params"  # the built-in tools' parameter models (and pydantic)


def warm(tmp_path: Path, store: str) -> dict[str, object]:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERON_", "OTEL_"))}
    env.update(
        HERON_HOME=str(home),
        PROBE_PROJECT=str(project),
        PROBE_STORE=store,
        PROBE_WATCHED=json.dumps([PROVIDER, TRANSPORT, EXECUTOR, MODELS, *SNAPSHOT]),
    )
    run = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    result: dict[str, object] = json.loads(run.stdout.strip().splitlines()[-1])
    return result


def test_warm_up_loads_the_provider_transport_executor_snapshot_code_and_models(tmp_path: Path) -> None:
    result = warm(tmp_path, "file")
    assert result["before"] == []  # none of it is loaded by building the session
    assert result["after"] == sorted([PROVIDER, TRANSPORT, EXECUTOR, MODELS, *SNAPSHOT])


def test_warm_up_of_a_session_without_a_file_loads_no_checkpoint_code(tmp_path: Path) -> None:
    result = warm(tmp_path, "memory")
    assert result["after"] == sorted([PROVIDER, TRANSPORT, EXECUTOR, MODELS])
