"""The test run never touches the user's own heron home (``tests/support/home_guard.py``): a
test without the ``home`` fixture, a tool it runs and a heron process it starts get the run's
home."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from heron.ai.abort import AbortSignal
from heron.ai.models import heron_home
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams
from tests.support.home_guard import REAL_HOME, RUN_HOME


def test_a_test_without_the_home_fixture_gets_the_runs_home_not_the_users() -> None:
    assert heron_home() == RUN_HOME
    assert ToolEnv(cwd=Path.cwd()).home == RUN_HOME
    assert REAL_HOME not in (heron_home(), *heron_home().parents)


def test_a_bash_call_records_its_processes_under_the_runs_home(tmp_path: Path) -> None:
    result = asyncio.run(
        BashTool(ToolEnv(cwd=tmp_path)).execute("c1", BashParams(command="true"), AbortSignal(), lambda _: None)
    )
    assert not result.is_error
    assert (RUN_HOME / "processes").is_dir()


def test_a_heron_process_started_by_a_test_inherits_the_runs_home(tmp_path: Path) -> None:
    code = "from heron.ai.models import heron_home; print(heron_home())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ)
    assert out.stdout.strip() == str(RUN_HOME)
