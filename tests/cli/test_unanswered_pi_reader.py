"""pi's own session reader opens a session heron left with an unanswered prompt (issue 31).

``heron -p`` is killed while the local server holds its request; pi's ``SessionManager``
(the npm package ``@earendil-works/pi-coding-agent`` 1.6, unchanged, run by Node through
tests/cli/pi_rpc/read_session.mjs) must open the file without error and read it as heron
wrote it: a version-3 tree whose leaf is the prompt, which is also the whole context; and
again after a new prompt added the note that it was never answered. Node and the package
are found as in tests/cli/test_rpc_pi_client.py (installed by .ci/run into .ci/.node);
without them the test is skipped locally and fails under CI.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.cli.test_print_json_e2e import Project, openai_args, project
from tests.cli.test_rpc_pi_client import pi_client
from tests.cli.test_unanswered_e2e import PROMPT, hang, kill_after_the_request, lines_of, start
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["pi_client", "project"]

READER = Path(__file__).resolve().parent / "pi_rpc" / "read_session.mjs"


def pi_reads(pi_client: tuple[Path, Path], path: Path) -> dict[str, Any]:
    node, package = pi_client
    env = {**os.environ, "PI_PACKAGE": str(package)}
    done = subprocess.run(
        [str(node), str(READER), str(path), str(path.parent)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_pi_opens_a_session_whose_prompt_was_never_answered(
    pi_client: tuple[Path, Path], project: Project, local_server: LocalServer
) -> None:
    hang(local_server)
    kill_after_the_request(start(project, "-p", PROMPT, *openai_args(local_server)), local_server)
    (path,) = project.session_files()
    written = lines_of(path)
    prompt_id = next(e["id"] for e in written if e["type"] == "message")

    seen = pi_reads(pi_client, path)
    assert seen["header"]["version"] == 3 and seen["sessionId"] == written[0]["id"]
    assert [(e["type"], e["id"], e["parentId"]) for e in seen["entries"]] == [
        (e["type"], e["id"], e["parentId"]) for e in written[1:]
    ]
    assert seen["leafId"] == prompt_id and seen["branch"][-1] == prompt_id
    assert seen["context"] == [{"role": "user", "content": [{"type": "text", "text": PROMPT}]}]
    (listed,) = seen["listed"]
    assert listed["path"] == str(path) and listed["firstMessage"] == PROMPT and listed["messageCount"] == 1

    # a new prompt after it: the note and the ledger record are read by pi too
    local_server.queue(openai_reply("Briefly, then."))
    result = project.run("-p", "--continue", "Keep it short.", *openai_args(local_server))
    assert result.code == 0, result.err
    seen = pi_reads(pi_client, path)
    assert [m["role"] for m in seen["context"]] == ["user", "custom", "user", "assistant"]
    assert seen["leafId"] == lines_of(path)[-1]["id"]
