"""The README's first command, as written, on a system Python that is "externally
managed" (Debian's, which refuses a bare ``pip install``): it must install heron into a
virtualenv and run it. Run on a copy of the repository, against a local server."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.support.fixtures import REPO
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply


def quick_start_lines() -> list[str]:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return [line for line in block.group(1).splitlines() if line.strip()]


def externally_managed_python() -> str | None:
    """A python3 carrying the EXTERNALLY-MANAGED marker (PEP 668), if the machine has one."""
    candidates = ["/usr/bin/python3", shutil.which("python3") or "", sys.executable]
    for python in candidates:
        if not python or not Path(python).exists():
            continue
        stdlib = subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('stdlib'))"], capture_output=True, text=True
        ).stdout.strip()
        if stdlib and (Path(stdlib) / "EXTERNALLY-MANAGED").exists():
            return python
    return None


def test_readme_has_exactly_two_set_up_commands() -> None:
    lines = quick_start_lines()
    assert len(lines) == 2
    assert lines[0].startswith("python3 -m venv .venv && .venv/bin/pip install")
    assert " .venv/bin/heron -p " in lines[0]
    assert lines[1].split("#")[0].strip() == "bash .ci/run"


def test_the_first_command_works_on_an_externally_managed_python(tmp_path: Path) -> None:
    python = externally_managed_python()
    if python is None:
        pytest.skip(
            "no externally managed python3 on this machine (PEP 668 marker absent): "
            f"{sysconfig.get_path('stdlib')}/EXTERNALLY-MANAGED"
        )
    copy = tmp_path / "heron"
    shutil.copytree(
        REPO,
        copy,
        ignore=shutil.ignore_patterns(
            ".venv", ".git", "__pycache__", "*.egg-info", "results", ".mypy_cache", ".ruff_cache"
        ),
    )
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(python)
    home = tmp_path / "home"
    home.mkdir()
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.startswith(("HERON_", "VIRTUAL_ENV", "PYTHON"))
    }
    env.update(PATH=f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin", HERON_HOME=str(home))
    line = quick_start_lines()[0]
    server = LocalServer()
    try:
        server.queue(openai_reply("The README documents two commands."))
        # the line as written, pointed at the local server instead of Anthropic's
        command = line.replace(
            "ANTHROPIC_API_KEY=sk-ant-... .venv/bin/heron -p",
            f".venv/bin/heron --base-url {server.url}/v1 --model test-model -p",
        )
        assert command != line
        done = subprocess.run(["bash", "-c", command], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    finally:
        server.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip().endswith("The README documents two commands.")
    assert (copy / ".venv" / "bin" / "heron").exists()
