"""The start-up tricks of the ``heron`` command (heron.cli.boot): the collector paused while
heron starts and frozen after, one switch that turns every trick off, Python's byte-code
switch respected, and the module's own check under every Python heron supports that this
machine has (3.11-3.13)."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.cli import boot

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def restore_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    yield
    boot.session_built()
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def _python(code: str, *, env: dict[str, str] | None = None, python: str = sys.executable) -> str:
    done = subprocess.run(
        [python, "-c", code], env={**os.environ, "PYTHONPATH": str(SRC), **(env or {})}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.usefixtures("restore_gc")
def test_begin_pauses_collection_and_session_built_freezes_start_up_and_collects_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(boot.SWITCH, raising=False)
    gc.enable()
    gc.unfreeze()
    boot.begin()
    assert not gc.isenabled()
    made_during_start_up = [[n] for n in range(1000)]
    boot.session_built()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made_during_start_up)  # never walked again
    boot.session_built()  # a second call (a command that built no session) changes nothing
    assert gc.isenabled()


@pytest.mark.usefixtures("restore_gc")
def test_a_collector_that_was_off_stays_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(boot.SWITCH, raising=False)
    gc.disable()
    gc.unfreeze()
    boot.begin()
    boot.session_built()
    assert not gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.usefixtures("restore_gc")
def test_session_built_without_begin_does_nothing() -> None:
    gc.enable()
    gc.unfreeze()
    boot.session_built()
    assert gc.isenabled() and gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("1", True), ("yes", True), ("0", False), ("off", False), (" False ", False)]
)
def test_the_switch(value: str | None, on: bool) -> None:
    assert boot.enabled({} if value is None else {boot.SWITCH: value}) is on


def test_the_switch_turns_every_trick_off() -> None:
    probe = (
        "import dataclasses, gc, sys\n"
        "from heron.cli import boot\n"
        "gc.enable(); boot.begin(); boot.serve_dataclass_code(); paused = not gc.isenabled()\n"
        "boot.session_built(); boot.end()\n"
        "print(paused, 'httpx._main' in sys.modules, hasattr(dataclasses, 'exec'), gc.isenabled())\n"
    )
    assert _python(probe, env={boot.SWITCH: "1"}) == "True True True False"
    assert _python(probe, env={boot.SWITCH: "0"}) == "False False False True"


def test_pythondontwritebytecode_is_respected(tmp_path: Path) -> None:
    """heron used to write its own modules' byte-code even under the variable; now a run
    writes no ``__pycache__`` into heron's tree when it is set, and Python's own when not."""
    root = tmp_path / "site"
    shutil.copytree(SRC / "heron", root / "heron", ignore=shutil.ignore_patterns("__pycache__"))
    command = [sys.executable, "-m", "heron.cli.main", "sessions", "list"]
    env = {**os.environ, "PYTHONPATH": str(root), "HERON_HOME": str(tmp_path / "home")}
    env.pop(boot.SWITCH, None)
    done = subprocess.run(command, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert list(root.rglob("__pycache__")) == []  # neither byte-code nor the dataclass code table
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert list((root / "heron" / "cli" / "__pycache__").glob("boot.*.pyc"))
    assert list((root / "heron" / "__pycache__").glob("dataclass-code.*.bin"))


def _interpreter(version: str) -> str | None:
    """A working ``python3.X``: on the path, or installed by pyenv (whose shim on the path
    fails for a version that is installed but not selected)."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    found = [str(path) for path in sorted(pyenv.glob(f"versions/{version}.*/bin/python{version}"))]
    for candidate in [*found, shutil.which(f"python{version}")]:
        if candidate and subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
            return candidate
    return None


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_the_boot_module_runs_under_every_supported_python(version: str) -> None:
    """Each trick leans on interpreter details (dataclasses' generated text, gc.freeze):
    ``python -m heron.cli.boot_check`` applies them all and checks each, under each Python found."""
    python = _interpreter(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(boot.SWITCH, None)
    done = subprocess.run([python, "-m", "heron.cli.boot_check"], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == f"ok {version}", done.stdout + done.stderr
