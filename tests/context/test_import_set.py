"""What importing the context library loads: never the layers above it, never pydantic-ai.

heron.context is usable as a library (docs/context-library.md): importing it, or its
engine, must not pull in the coding runtime, the CLI or the agent loop's package, and
only the adapter module loads pydantic-ai. Checked in a fresh interpreter, where nothing
else has been imported yet.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _loaded(module: str) -> list[str]:
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))


def _under(modules: list[str], *packages: str) -> list[str]:
    return [m for m in modules if any(m == p or m.startswith(p + ".") for p in packages)]


def test_importing_heron_context_loads_no_upper_layer_nor_pydantic_ai() -> None:
    loaded = _loaded("heron.context")
    assert _under(loaded, "heron.coding", "heron.cli", "heron.agent", "pydantic_ai") == []


def test_the_engine_loads_no_upper_layer_nor_pydantic_ai() -> None:
    loaded = _loaded("heron.context.engine")
    assert "heron.context.engine" in loaded
    assert _under(loaded, "heron.coding", "heron.cli", "pydantic_ai") == []


def test_only_the_adapter_loads_pydantic_ai() -> None:
    pytest.importorskip("pydantic_ai")
    loaded = _loaded("heron.context.pydantic_ai")
    assert "pydantic_ai" in loaded
    assert _under(loaded, "heron.coding", "heron.cli") == []
