"""Fixtures of the tests that run commands in the sandbox through heron: a directory the
sandbox must not let them write, the sandbox required where the tests run (Linux CI
machines have bubblewrap; a missing one fails, it does not skip), who runs the commands
(root, and an unprivileged user), and a ``PATH`` without bubblewrap (a machine without it).

A test module uses them by importing them (``from tests.support.sandbox_fixtures import
outside, sandbox_ready``) and naming them in ``__all__``.

Why two users: a sandbox is a boundary only for a process that cannot change it, and root
keeps capabilities a normal user never has (unmounting what hides heron's home, remounting a
read-only directory writable). CI runs as root, users mostly do not; the battery runs its
commands both ways. When the test process is root, the unprivileged case runs them through
``setpriv`` as ``nobody`` (uid 65534), with everything they could touch owned by that user,
so that only the sandbox - not file permissions - stops them. When it is not root, the root
case is skipped and says why.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from heron.agent.tools import ToolResult
from heron.ai.abort import AbortSignal
from heron.coding.sandbox import Confinement, Sandbox, SandboxPolicy
from heron.coding.sandbox.bwrap import availability
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams

NOBODY = 65534


@dataclass(frozen=True)
class User:
    """Who runs the commands: ``prefix`` before each command's argv (empty: the test
    process itself); ``uid``: who owns what the test makes (None: the test process)."""

    name: str
    prefix: tuple[str, ...] = ()
    uid: int | None = None

    def own(self, *paths: Path) -> None:
        """``paths`` and everything under them made this user's (so permissions never stop it)."""
        if self.uid is None:
            return
        for root in paths:
            for path in [root, *root.rglob("*")]:
                os.lchown(path, self.uid, self.uid)

    def confining(self, confine: Callable[[list[str], Path], Confinement]) -> Callable[[list[str], Path], Confinement]:
        """A tool environment's ``confine`` whose commands run as this user: heron's own
        command line (bubblewrap's, or the bare one without it) behind ``prefix``."""
        if not self.prefix:
            return confine

        def as_user(argv: list[str], cwd: Path) -> Confinement:
            confinement = confine(argv, cwd)
            return replace(confinement, argv=[*self.prefix, *confinement.argv])

        return as_user

    def python(self, where: Path) -> str:
        """An interpreter that runs as this user, with heron importable: ``sys.executable``
        itself, or a script in ``where`` that starts it through ``prefix`` (for
        ``HERON_TEST_PYTHON``). Skips the test, saying why, where the user cannot run it
        (an interpreter installed under a directory only root may enter)."""
        if not self.prefix:
            return sys.executable
        script = where / "python-as-user"
        script.write_text("#!/bin/sh\nexec " + " ".join([*self.prefix, sys.executable]) + ' "$@"\n')
        script.chmod(0o755)
        done = subprocess.run([str(script), "-c", "import heron.cli.main"], capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"the {self.name} user cannot run {sys.executable} with heron: {done.stderr[-300:]}")
        return str(script)


@pytest.fixture(params=["root", "unprivileged"])
def user(request: pytest.FixtureRequest) -> User:
    euid = os.geteuid()
    if request.param == "root":
        if euid != 0:
            pytest.skip(f"the root case needs a test process run as root (CI runs as root); this one is uid {euid}")
        return User("root")
    if euid != 0:
        return User("unprivileged")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("the unprivileged case needs setpriv (util-linux) to leave root")
    return User(
        "unprivileged",
        (setpriv, f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"),
        NOBODY,
    )


@pytest.fixture
def workdir(user: User, tmp_path: Path) -> Iterator[Path]:
    """A directory the user owns: ``tmp_path``, or for a user other than the test process a
    new one under ``/tmp`` (pytest's own lies under a directory only its owner may enter)."""
    if user.uid is None:
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="heron-battery-", dir="/tmp"))
    path.chmod(0o755)
    user.own(path)
    try:
        yield path
    finally:
        _writable_again(path)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def outside() -> Iterator[Path]:
    """Outside the project and the temp directory (which commands may write): the sandbox
    does not let commands write here."""
    path = Path(tempfile.mkdtemp(prefix="heron-sandbox-outside-", dir="/var/tmp"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        _writable_again(path)
        shutil.rmtree(path, ignore_errors=True)


def _writable_again(root: Path) -> None:
    """Undo a ``chmod 000`` a command managed, so the directory can be removed."""
    for entry in [root, *root.rglob("*")]:
        if not entry.is_symlink():
            os.chmod(entry, 0o700 if entry.is_dir() else 0o600)


@pytest.fixture
def sandbox_ready() -> None:
    state = availability()
    if not state.ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {state.reason}")


def path_without_bwrap(root: Path, path: str) -> str:
    """A ``PATH`` with every program of ``path`` but bubblewrap: a directory in ``root`` of
    links to them (the first of each name, as a search of ``path`` finds it)."""
    farm = root / "bin-without-bwrap"
    farm.mkdir(parents=True, exist_ok=True)
    for directory in path.split(os.pathsep):
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            link = farm / name
            if name != "bwrap" and not os.path.lexists(link):
                link.symlink_to(Path(directory) / name)
    return str(farm)


@pytest.fixture(scope="session")
def no_bwrap() -> Iterator[str]:
    """A ``PATH`` on which heron finds no bubblewrap (as on a machine without it), open to
    every user; bubblewrap itself stays installed."""
    root = Path(tempfile.mkdtemp(prefix="heron-no-bwrap-"))
    root.chmod(0o755)
    try:
        found = path_without_bwrap(root, os.environ.get("PATH", os.defpath))
        assert shutil.which("bwrap", path=found) is None
        yield found
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["present", "hidden"])
def bubblewrap(request: pytest.FixtureRequest) -> str | None:
    """The machine with bubblewrap (None: ``PATH`` as it is) and without it (a ``PATH``
    without it): the restart-equivalence suites run both ways, since without it every
    command's result may carry the "sandbox unavailable" note."""
    if request.param == "present":
        return None
    path: str = request.getfixturevalue("no_bwrap")
    return path


# --- running the battery's commands through heron's bash tool ---------------------------


def snapshot(root: Path) -> list[tuple[str, bytes, int]]:
    if not root.exists():
        return []
    return sorted(
        (str(p.relative_to(root)), p.read_bytes() if p.is_file() else b"", stat.S_IMODE(p.lstat().st_mode))
        for p in [root, *root.rglob("*")]
    )


def layout(base: Path, user: User, outside: Path | None = None) -> tuple[Path, Path, dict[str, Path]]:
    """The project, heron's home, and the protected directories (each with a file ``f``),
    all the user's own: only the sandbox may stop a command from changing them."""
    project, home = base / "proj", base / "home"
    targets = {"denied": project / "locked", "home": home / "sessions"}
    if outside is not None:
        targets["outside"] = outside / "dir"
    for directory in targets.values():
        directory.mkdir(parents=True)
        (directory / "f").write_text("keep\n")
    user.own(base, *([outside] if outside is not None else []))
    return project, home, targets


def bash_tool(project: Path, home: Path, policy: SandboxPolicy, user: User, sandbox: Sandbox | None = None) -> BashTool:
    env = ToolEnv(cwd=project, home=home)
    env.confine = user.confining((sandbox or Sandbox(lambda: policy)).confine)
    return BashTool(env)


def bash_result(tool: BashTool, command: str) -> ToolResult:
    return asyncio.run(tool.execute("c", BashParams(command=command, timeout=20), AbortSignal(), lambda _: None))


def run_bash(tool: BashTool, command: str) -> tuple[str, dict[str, object]]:
    result = bash_result(tool, command)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return text, dict(result.details or {})


def restore(directory: Path, user: User) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for path in [directory, *directory.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    (directory / "f").write_text("keep\n")
    user.own(directory)
