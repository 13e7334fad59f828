"""The test run's own heron home, and the check that the user's was left alone.

Every default that comes from ``$HERON_HOME`` (a ``ToolEnv``'s home, the sessions, the marks of
tool processes under ``processes/``, settings, trust) points at a home made for the run,
set by ``tests/conftest.py`` before anything is collected: module-level and session-scoped
fixtures and the heron processes tests start (which inherit the environment, or copy
``HERON_HOME`` into the one they build) get it too. A test that needs a home of its own takes
the ``home`` fixture. At the end, a ``~/.heron`` that did not exist when the run began and
exists now fails the run, naming what is in it: something ran heron without the run's home
(the bash tests once left ``~/.heron/processes`` behind). A ``~/.heron`` that existed before
is the user's and may change under a heron they run meanwhile, so it is not checked.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

REAL_HOME = Path.home() / ".heron"
_REAL_HOME_EXISTED = REAL_HOME.exists()
RUN_HOME = Path(tempfile.mkdtemp(prefix="heron-tests-home-"))


def finish(session: pytest.Session) -> None:
    """Remove the run's home; fail the run if it made ``~/.heron``."""
    shutil.rmtree(RUN_HOME, ignore_errors=True)
    if _REAL_HOME_EXISTED or not REAL_HOME.exists():
        return
    made = sorted(str(p.relative_to(REAL_HOME)) for p in REAL_HOME.rglob("*"))[:20]
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(
            f"\nFAILED: the test run created {REAL_HOME} ({', '.join(made) or 'empty'}): something ran heron "
            "without the run's HERON_HOME (a child process started with an environment of its own?)",
            red=True,
        )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED
