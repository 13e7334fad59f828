from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.ai.providers.faux import FauxProvider
from heron.ai.registry import unregister_provider
from heron.context.rules.invariants import STRICT_LOG
from tests.support import home_guard
from tests.support.http_server import LocalServer

# No test, fixture or child process touches the user's own heron home (tests/support/home_guard.py).
os.environ["HERON_HOME"] = str(home_guard.RUN_HOME)

# A suite started as a background job of a script (`bash .ci/run &`: the shell starts it with
# SIGINT ignored) would pass that on to every heron the tests start, and Python keeps an
# ignored SIGINT ignored: the tests that press Ctrl+C need it as a terminal delivers it.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    home_guard.finish(session)


@pytest.fixture
def local_server() -> Iterator[LocalServer]:
    server = LocalServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A heron home of the test's own (``$HERON_HOME``): settings, sessions, trust, extensions."""
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HERON_HOME", str(path))
    return path


@pytest.fixture
def faux() -> Iterator[FauxProvider]:
    provider = FauxProvider.install("faux")
    try:
        yield provider
    finally:
        unregister_provider("faux")


# Every request made in the test suite is checked against the context invariants
# (heron.context.rules.invariants); a violation anywhere fails the test that caused it.
os.environ.setdefault("HERON_CHECK_CONTEXT", "strict")
# The silent pre-compaction memory flush sends a request of its own; tests whose scripted
# servers do not expect it run without it (the flush's own tests turn it back on).
os.environ.setdefault("HERON_MEMORY_FLUSH", "0")
# Background compaction sends a summary request beside the turn, at a time scripted replies
# queued in order do not expect; its own tests turn it back on (child processes started with
# a clean environment, as the black-box suites do, run with it on).
os.environ.setdefault("HERON_BACKGROUND_COMPACTION", "0")


@pytest.fixture(autouse=True)
def _context_invariants_hold() -> Iterator[None]:
    STRICT_LOG.take()
    yield
    violations = STRICT_LOG.take()
    if violations:
        pytest.fail("context invariants violated:\n" + "\n".join(f"  {v}" for v in violations), pytrace=False)
