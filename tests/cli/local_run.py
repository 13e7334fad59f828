"""Running the real ``heron`` command against a local server, one process per turn."""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.cli.test_print_json_e2e import heron_command


@dataclass
class Place:
    cwd: Path
    home: Path

    @classmethod
    def make(cls, tmp: Path) -> Place:
        cwd, home = tmp / "proj", tmp / "home"
        cwd.mkdir()
        home.mkdir()
        return cls(cwd, home)

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("HERON_")}
        env["HERON_HOME"] = str(self.home)
        return env

    def run(self, *args: str, stdin: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*heron_command(), *args],
            cwd=self.cwd,
            env=self.env(),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
