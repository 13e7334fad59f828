"""``import heron.ai`` must not pull in any provider SDK, pydantic, or asyncio."""

from __future__ import annotations

import json
import subprocess
import sys


def modules_after(statement: str) -> set[str]:
    code = f"import sys, json; {statement}; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return set(json.loads(out))


def test_import_heron_ai_is_light() -> None:
    loaded = modules_after("import heron.ai")
    heavy = {"anthropic", "openai", "google.genai", "httpx", "pydantic", "asyncio", "jiter"}
    assert not heavy & loaded, heavy & loaded


def test_using_faux_imports_no_sdk() -> None:
    loaded = modules_after(
        "import asyncio, heron.ai as ai; from heron.ai.providers.faux import FauxProvider, text;"
        "f = FauxProvider.install(); f.queue(text('x'));"
        "asyncio.run(ai.complete(f.model(), ai.Context(messages=[ai.UserMessage(content='q')])))"
    )
    assert not {"anthropic", "openai", "google.genai"} & loaded


def test_version_command() -> None:
    out = subprocess.run([sys.executable, "-m", "heron.cli.main", "--version"], capture_output=True, text=True)
    assert out.returncode == 0
    assert out.stdout.startswith("heron ")


def test_no_vendor_sdk_is_a_dependency() -> None:
    """heron speaks the wire APIs itself: the SDKs (about 90 MB) are not installed with it
    (the dev extra keeps them for the benchmarks that compare against them)."""
    import tomllib
    from pathlib import Path

    project = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())["project"]
    names = {dep.split(">")[0].split("[")[0].split("=")[0].strip().lower() for dep in project["dependencies"]}
    assert not {"anthropic", "openai", "google-genai"} & names
