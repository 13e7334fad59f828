"""``heron sessions report`` as a person sees it: the page rendered in headless Chromium.

A 16k session is driven through the real ``heron --mode rpc`` against the audit's scripted
server until it has compacted at least three times and taken prune steps; the report is
written by the real command, opened in Debian's Chromium (driven by Playwright), and checked
through the DOM: one curve point per request, one marker per ledger record, the summary
shown when a compaction marker is hovered, and a hostile session that runs nothing. The
screenshots stay in the test's temp dir (CI keeps it as the artifact).

Chromium comes from Debian's packages (``.ci/run`` installs it); without it, or without
Playwright, the tests skip - and fail under CI, where a skip would hide a missing install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.audit_harness import PlanServer, Rpc, heron, make_project
from tests.cli.test_context_audit import LIMITS, MIXED, SMALL
from tests.support.http_server import LocalServer

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
TURNS = 42  # the MIXED plan three times over: >= 3 compactions with recent results protected
SETTINGS = {"compaction": {"keepRecentTokens": 2000}, "pruning": {"keepTurns": 8}}


def _browser_or_skip() -> Any:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if CHROMIUM is None or sync_playwright is None:
        missing = "chromium" if CHROMIUM is None else "playwright"
        if os.environ.get("CI"):
            pytest.fail(f"{missing} is missing under CI: .ci/run installs it")
        pytest.skip(f"{missing} is not installed")
    return sync_playwright


@pytest.fixture(scope="module")
def compacted_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict[str, str]]]:
    """(session file, project dir, env) of a 16k session with >= 3 compactions and prune steps."""
    root = tmp_path_factory.mktemp("report")
    plans = {n: MIXED[n % len(MIXED)] for n in range(TURNS)}
    server = PlanServer(plans, LIMITS)
    local = LocalServer(responder=server)
    try:
        cwd, env = make_project(root, local.url, [SMALL], SETTINGS)
        rpc = Rpc(cwd, env, "local/small")
        for n in range(TURNS):
            rpc.turn(server, n)
        rpc.close()
    finally:
        local.close()
    [session] = list((root / "home" / "sessions").rglob("*.jsonl"))
    yield session, cwd, env


def _ledger_records(session: Path) -> list[dict[str, Any]]:
    records = []
    for line in session.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("type") == "custom" and entry.get("customType") == "heron.ledger":
            records.append(entry["data"])
    return records


def _requests(session: Path) -> int:
    count = 0
    for line in session.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        count += entry.get("type") == "message" and entry["message"].get("role") == "assistant"
    return count


def _report(session: Path, cwd: Path, env: dict[str, str], out: Path) -> None:
    done = subprocess.run(
        [*heron(), "sessions", "report", str(session), "-o", str(out)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)


def test_the_report_in_chromium(compacted_session: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    sync_playwright = _browser_or_skip()
    session, cwd, env = compacted_session
    records = _ledger_records(session)
    assert sum(r["kind"] == "compaction" for r in records) >= 3 and any(r["kind"] == "prune" for r in records)
    page_file = tmp_path / "report.html"
    _report(session, cwd, env, page_file)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.on(
                "request",
                lambda request: errors.append(f"fetched {request.url}") if request.url != page_file.as_uri() else None,
            )
            page.goto(page_file.as_uri())
            curve = page.locator("#context-chart .curve")
            assert curve.get_attribute("data-points") == str(_requests(session))
            assert len((curve.get_attribute("points") or "").split()) == _requests(session)
            assert page.locator("#context-chart .marker").count() == len(records)
            assert page.locator("#context-chart .window-line").count() == 1
            # the first written compaction's marker shows its summary (a background summary
            # given up is a compaction record too, with nothing summarised)
            tip, texts = page.locator("#tip"), []
            for compaction in page.locator("#context-chart .marker.k-compaction").all():
                compaction.hover()
                assert tip.is_visible()
                texts.append(tip.inner_text())
                if "## Goal" in texts[-1]:
                    break
            assert "## Goal" in texts[-1] and "Follow the plan." in texts[-1], texts
            page.screenshot(path=str(tmp_path / "report-curve.png"))
            page.select_option("#ledger-kind", "compaction")
            assert page.locator("#ledger-body tr").count() == sum(r["kind"] == "compaction" for r in records)
            last_turn = page.locator("#turns details.turn").last
            last_turn.locator("summary").click()
            # The page draws a turn's messages on the `toggle` event, which the browser queues after the click.
            last_turn.locator(".msg").first.wait_for(state="attached", timeout=10_000)
            assert last_turn.locator(".msg").count() > 0
            page.screenshot(path=str(tmp_path / "report-full.png"), full_page=True)
            assert errors == []
        finally:
            browser.close()


def test_a_hostile_session_renders_as_text(tmp_path: Path) -> None:
    sync_playwright = _browser_or_skip()
    from heron.ai.types import AssistantMessage, TextContent, Usage, UserMessage
    from heron.coding.report import write_report
    from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
    from heron.session.store import SessionStore

    store = SessionStore.create(tmp_path / "proj", home=tmp_path / "home")
    hostile = (
        "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned = 2'>"
        "<a href='javascript:window.__pwned=3'>link</a>\x1b[2J\x1b]0;title\x07"
    )
    store.append_message(UserMessage(content=[TextContent(text=hostile + "y" * 1_000_000)]))
    store.append_message(
        AssistantMessage(
            content=[TextContent(text=hostile)], provider="p", model="m", api="openai-chat", usage=Usage(input=10)
        )
    )
    store.append_custom(LEDGER_CUSTOM_TYPE, {"kind": "spill'><script>window.__pwned=4</script>", "recover": hostile})
    target = write_report(store, tmp_path / "hostile.html")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(target.as_uri())
            page.locator("#turns details.turn").first.locator("summary").click()
            page.locator("#turns .msg").first.wait_for(state="attached", timeout=10_000)
            page.locator("#context-chart .marker").first.hover()
            assert page.evaluate("window.__pwned === undefined")
            assert page.locator("img").count() == 0 and page.locator("a[href^='javascript']").count() == 0
            assert "<script>window.__pwned = 1</script>" in page.locator("#turns").inner_text()
            page.screenshot(path=str(tmp_path / "hostile.png"), full_page=False)
        finally:
            browser.close()
