"""rpc ``export_report`` and ``heron sessions context``'s curve line, through the real command."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.cli.audit_harness import PlanServer, Rpc, heron, make_project, read
from tests.cli.test_context_audit import LIMITS, SMALL
from tests.support.http_server import LocalServer


def test_export_report_over_rpc_and_the_sparkline_of_the_file(tmp_path: Path) -> None:
    plans = {0: [read("data/small.txt")], 1: [read("data/file0.txt")]}
    server = PlanServer(plans, LIMITS)
    local = LocalServer(responder=server)
    try:
        cwd, env = make_project(tmp_path, local.url, [SMALL])
        rpc = Rpc(cwd, env, "local/small")
        rpc.turn(server, 0)
        rpc.turn(server, 1)
        answer = rpc.command(
            {"type": "export_report", "outputPath": "report.html"},
            lambda e: e.get("type") == "response" and e.get("command") == "export_report",
        )[-1]
        assert answer["success"], answer.get("error")
        page = Path(answer["data"]["path"])
        assert page == cwd / "report.html"  # relative to the session's directory
        html = page.read_text(encoding="utf-8")
        assert 'data-points="4"' in html and 'class="window-line"' in html  # two turns, two requests each
        bad = rpc.command(
            {"type": "export_report", "outputPath": 7},
            lambda e: e.get("type") == "response" and e.get("command") == "export_report",
        )[-1]
        assert not bad["success"] and "outputPath" in bad["error"]
        missing = rpc.command(
            {"type": "export_report", "outputPath": str(tmp_path / "no-such-dir" / "r.html")},
            lambda e: e.get("type") == "response" and e.get("command") == "export_report",
        )[-1]
        assert not missing["success"] and "could not write the report" in missing["error"]
        rpc.close()
    finally:
        local.close()
    [session] = list((tmp_path / "home" / "sessions").rglob("*.jsonl"))
    done = subprocess.run(
        [*heron(), "sessions", "context", str(session), "--window", "16384"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    curve = [line for line in done.stdout.splitlines() if line.startswith("context ")]
    assert len(curve) == 1 and "/ 16,384 tokens" in curve[0] and "over 4 request(s)" in curve[0]
