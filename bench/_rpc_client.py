"""One rpc process (heron's or pi's) driven prompt by prompt, for benchmarks that put heron
and pi 1.6.0 side by side on the same scripted server.

Both speak pi's rpc protocol (docs/rpc.md): a ``prompt`` command, then events, and
``agent_settled`` once the session is idle again - after pi's compaction that follows a
run and after heron's ``run_end``. A turn is measured to that event for both, so neither
is credited for work it leaves for after the answer. A turn whose last answer failed
(heron's ``run_end.error``, pi's ``stopReason`` "error") stops the benchmark with the
process's stderr.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

TIMEOUT_S = 300


class RpcProcess:
    def __init__(self, command: list[str], cwd: Path, env: dict[str, str], name: str) -> None:
        self.name = name
        self.child = subprocess.Popen(
            command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.ids = 0

    def prompt(self, text: str) -> None:
        """Send ``text`` as a prompt and read events until the session is settled."""
        assert self.child.stdin is not None and self.child.stdout is not None
        self.ids += 1
        ident = f"c{self.ids}"
        self.child.stdin.write((json.dumps({"id": ident, "type": "prompt", "message": text}) + "\n").encode())
        self.child.stdin.flush()
        failure: str | None = None
        for raw in self.child.stdout:
            event: dict[str, Any] = json.loads(raw)
            kind = event.get("type")
            if kind == "response" and event.get("id") == ident and not event.get("success", True):
                failure = str(event)
                break
            if kind == "run_end" and event.get("error") is not None:
                failure = str(event)
            if kind == "message_end" and event["message"].get("role") == "assistant":
                # an overflow answered by compaction and a retry is not a failure: the last answer counts
                message = event["message"]
                failure = str(message.get("errorMessage")) if message.get("stopReason") == "error" else None
            if kind == "agent_settled":
                break
        else:
            failure = "the process ended"
        if failure is not None:
            raise AssertionError(f"{self.name}, prompt {self.ids}: {failure}\n{self.stderr()}")

    def stderr(self) -> str:
        if self.child.poll() is None:
            return ""
        return self.child.stderr.read().decode(errors="replace")[-3000:] if self.child.stderr else ""

    def close(self) -> None:
        assert self.child.stdin is not None
        self.child.stdin.close()
        try:
            self.child.wait(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
