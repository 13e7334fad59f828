"""The suite without ``../shared``: tests that need the shared data skip, naming the
missing path, and everything else runs (a collection error would stop the whole run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.fixtures import REPO

# A module of each kind: recorded streams parametrized at import, a module-level mark,
# the pi session files, and the shared generator script.
MODULES = [
    "tests/ai/test_provider_openai_chat.py",
    "tests/conformance/test_pi_skills.py",
    "tests/conformance/test_compact_plan.py",
    "tests/session/test_paths.py",
]


def test_the_suite_runs_without_the_shared_data(tmp_path: Path) -> None:
    absent = tmp_path / "no-shared-here"
    env = {**os.environ, "HERON_SHARED": str(absent)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", *MODULES],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert f"shared fixture missing: {absent}/fixtures/provider-streams/manifest.json" in out
    assert f"shared fixture missing: {absent}/fixtures/pi/skills" in out
    assert f"shared fixture missing: {absent}/fixtures/pi/sessions" in out
    # the tests that need no shared data still ran
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and " skipped" in summary and "error" not in summary, summary
