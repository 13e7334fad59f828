"""The pickers of ``/resume``, ``/model`` and ``/tree`` by keyboard, and the filtering
behind them. The end-to-end tests run the real program under tmux (a real terminal
emulator: ``capture-pane`` shows what the user sees, so a filtered-out line is checked
to be gone) against the local OpenAI-compatible server of test_interactive.py; each
keeps text screenshots of the pickers in its temp dir.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from heron.cli.tui.picker import Item, PickerState, matches
from tests.cli import test_interactive as base
from tests.cli.test_interactive import TIMEOUT, answer, bash_call, environment
from tests.cli.test_interactive_esc import Tmux, start_tmux, stop_tmux
from tests.support.http_server import LocalServer

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

dirs = base.dirs


# --- filtering, without a terminal --------------------------------------------------------


def test_every_word_typed_must_match_in_any_order() -> None:
    item = Item("2026-12-01 10:00  fix the parser", "p", "12 msgs · 40 KB")
    assert matches(item, "parser fix")
    assert matches(item, "PARSER 40 kb")
    assert not matches(item, "parser lexer")
    assert matches(item, "")


def test_the_state_filters_moves_and_keeps_the_current_item_selected() -> None:
    items = [Item("alpha", 1), Item("beta", 2, current=True), Item("internal", 3, extra=True), Item("gamma", 4)]
    state = PickerState(items)
    assert [i.value for i in state.shown] == [1, 2, 4]  # the extra one waits for Tab
    assert state.chosen() == items[1]  # opens on the current one
    state.move(5)
    assert state.chosen() == items[3]  # stops at the end
    state.show_extra = True
    state.query = "a"
    state.refilter()
    assert [i.value for i in state.shown] == [1, 2, 3, 4] and state.selected == 0
    state.query = "zzz"
    state.refilter()
    assert state.chosen() is None


# --- by keyboard, under tmux ----------------------------------------------------------------


def heron_print(server: LocalServer, home: Path, project: Path, prompt: str) -> None:
    """One earlier session, made the way users make them."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "heron.cli.main",
            "--base-url",
            f"{server.url}/v1",
            "--model",
            "test-model",
            "-p",
            prompt,
        ],
        cwd=project,
        env=environment(home, "dumb"),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr


def keys(tmux: Tmux, *typed: str) -> None:
    tmux("send-keys", "-t", "heron", *typed)


def done(tmux: Tmux, text: str, timeout: float = 45) -> str:
    """Until ``text`` is shown and, after it, the footer a finished job prints (the input
    line is open again: keys typed now are not lost between two prompts)."""
    deadline = time.monotonic() + timeout
    while True:
        screen = tmux.screen()
        if text in screen and "─ test-model" in screen.rsplit(text, 1)[1]:
            time.sleep(0.2)
            return screen
        assert time.monotonic() < deadline, f"{text!r} and a footer after it never appeared:\n{screen}"
        time.sleep(0.05)


def gone(tmux: Tmux, text: str, timeout: float = 20, after: str | None = None) -> str:
    """Until ``text`` is no longer on the screen (or, given ``after``, no longer below the
    last ``after``: in the picker, not in the transcript above it)."""
    deadline = time.monotonic() + timeout
    while True:
        screen = tmux.screen()
        part = screen.rsplit(after, 1)[-1] if after else screen
        if text not in part:
            return screen
        assert time.monotonic() < deadline, f"{text!r} is still shown:\n{screen}"
        time.sleep(0.05)


@pytest.fixture
def tmux_heron(local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path) -> Any:
    home, project = dirs
    started: list[Tmux] = []

    def start() -> Tmux:
        tmux = start_tmux(local_server, home, project, tmp_path.name)
        started.append(tmux)
        tmux.wait("(Shift+Tab)")  # the status bar: the input line is open
        return tmux

    yield start
    for tmux in started:
        stop_tmux(tmux)


def test_resume_picker_filters_picks_and_cancels(
    tmux_heron: Any, local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, project = dirs
    local_server.queue(answer("About the parser."), answer("About the lexer."))
    heron_print(local_server, home, project, "alpha question about the parser")
    heron_print(local_server, home, project, "beta question about the lexer")
    tmux = tmux_heron()
    keys(tmux, "/resume", "Enter")
    screen = tmux.wait("resume which session?")
    assert "alpha question" in screen and "beta question" in screen
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d  alpha question .* 2 msgs · \d+(\.\d)? [KM]?B · ", screen)
    keys(tmux, "beta")
    screen = gone(tmux, "alpha question")
    (tmp_path / "screen-resume-picker.txt").write_text(screen)
    keys(tmux, "Enter")
    tmux.wait("resumed: ")
    done(tmux, "About the lexer.")  # the recap of the chosen session
    keys(tmux, "/resume", "Enter")
    tmux.wait("resume which session?")
    keys(tmux, "Escape")
    gone(tmux, "resume which session?")
    keys(tmux, "/session", "Enter")
    screen = tmux.wait("messages: ")
    assert screen.count("resumed: ") == 1  # Esc switched nothing


def test_model_picker_shows_windows_and_prices_and_switches(
    tmux_heron: Any, local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, _ = dirs
    models = [
        {"id": "small-model", "contextWindow": 32000, "cost": {"input": 0.5, "output": 1.5}},
        {"id": "large-model", "contextWindow": 200000, "cost": {"input": 3, "output": 15}, "reasoning": True},
    ]
    provider = {"baseUrl": f"{local_server.url}/v1", "api": "openai-chat", "models": models}
    (home / "models.json").write_text(json.dumps({"providers": {"second": provider}}))
    tmux = tmux_heron()
    keys(tmux, "/model", "Enter")
    screen = tmux.wait("second/large-model")
    assert "200k context · $3/$15 per M tokens · reasoning" in screen
    assert "custom/test-model (current)" in screen
    keys(tmux, "Escape")
    gone(tmux, "second/large-model")
    keys(tmux, "/model", "Enter")
    tmux.wait("second/large-model")
    keys(tmux, "small")
    screen = gone(tmux, "second/large-model")
    (tmp_path / "screen-model-picker.txt").write_text(screen)
    keys(tmux, "Enter")
    tmux.wait("model: second/small-model (window 32k)")
    local_server.queue(answer("Small answers."))
    keys(tmux, "hello", "Enter")
    tmux.wait("Small answers.")
    assert local_server.requests[-1].json()["model"] == "small-model"


def test_tree_picker_shows_the_conversation_tab_shows_all_and_enter_moves(
    tmux_heron: Any, local_server: LocalServer, tmp_path: Path
) -> None:
    local_server.queue(answer("First answer."), answer("Second answer."))
    tmux = tmux_heron()
    keys(tmux, "first prompt", "Enter")
    done(tmux, "First answer.")
    keys(tmux, "/thinking low", "Enter")  # an internal entry: a thinking-level change
    tmux.wait("thinking: low")
    time.sleep(0.3)
    keys(tmux, "second prompt", "Enter")
    done(tmux, "Second answer.")
    keys(tmux, "/tree", "Enter")
    screen = tmux.wait("go to which entry?")
    assert "user: first prompt" in screen and "assistant: Second answer." in screen
    assert "thinking" not in screen.split("go to which entry?")[1].split("filter:")[1]
    keys(tmux, "Tab")
    screen = tmux.wait("thinking_level")
    (tmp_path / "screen-tree-picker-all.txt").write_text(screen)
    keys(tmux, "Tab", "first")
    screen = gone(tmux, "Second answer.", after="filter:")
    (tmp_path / "screen-tree-picker.txt").write_text(screen)
    keys(tmux, "Enter")
    tmux.wait("moved to just before entry")
    tmux.wait("› first prompt")  # noqa: RUF001 - its text is back in the input line
    keys(tmux, "C-u", "/tree", "Enter")
    tmux.wait("go to which entry?")
    keys(tmux, "Escape")
    gone(tmux, "go to which entry?")


# --- the permission prompt: one key answers ------------------------------------------------


def test_one_key_answers_the_permission_question(
    tmux_heron: Any, local_server: LocalServer, dirs: tuple[Path, Path], tmp_path: Path
) -> None:
    home, project = dirs
    (home / "settings.json").write_text(json.dumps({"permissions": {"ask": ["Bash(touch:*)"]}}))
    local_server.queue(
        bash_call("touch allowed.txt"),
        answer("Made it."),
        bash_call("touch denied.txt", "call_2"),
        answer("Understood."),
    )
    tmux = tmux_heron()
    keys(tmux, "make the file", "Enter")
    tmux.wait("allow? y/a/n")
    screen = tmux.wait("Esc denies")
    (tmp_path / "screen-permission.txt").write_text(screen)
    assert "y allow once" in screen and "n deny" in screen
    keys(tmux, "y")  # alone: no Enter
    done(tmux, "Made it.")
    assert (project / "allowed.txt").exists()
    keys(tmux, "another", "Enter")
    tmux.wait("Esc denies", 2)
    keys(tmux, "n")
    tmux.wait("why?")
    keys(tmux, "use the Makefile", "Enter")
    done(tmux, "Understood.")
    assert not (project / "denied.txt").exists()
    sent = json.dumps(local_server.requests[-1].json()["messages"])
    assert "use the Makefile" in sent


def test_fork_and_mode_pickers_filter_pick_and_cancel(
    tmux_heron: Any, local_server: LocalServer, tmp_path: Path
) -> None:
    local_server.queue(answer("First answer."), answer("Second answer."))
    tmux = tmux_heron()
    keys(tmux, "first prompt", "Enter")
    done(tmux, "First answer.")
    keys(tmux, "second prompt", "Enter")
    done(tmux, "Second answer.")
    keys(tmux, "/fork", "Enter")
    screen = tmux.wait("fork from which entry?")
    assert "user: first prompt" in screen and "(current)" in screen  # opens on the leaf
    keys(tmux, "Escape")
    gone(tmux, "fork from which entry?")
    keys(tmux, "/fork", "Enter")
    tmux.wait("fork from which entry?")
    keys(tmux, "first answer")
    screen = gone(tmux, "Second answer.", after="filter:")
    (tmp_path / "screen-fork-picker.txt").write_text(screen)
    keys(tmux, "Enter")
    screen = tmux.wait("forked: ")
    assert "(2 messages in the context)" in screen.replace("\n", "")  # the path is long: the line wraps
    assert screen.count("forked: ") == 1  # the Esc forked nothing
    keys(tmux, "/mode", "Enter")
    screen = tmux.wait("permission mode (now default)")
    assert "accept-edits" in screen and "read-only: edits and writes are denied" in screen
    keys(tmux, "Escape")
    gone(tmux, "permission mode (now default)")
    keys(tmux, "/mode", "Enter")
    tmux.wait("permission mode (now default)")
    keys(tmux, "read-only")  # the filter searches what each mode allows too
    screen = gone(tmux, "accept-edits", after="filter:")
    (tmp_path / "screen-mode-picker.txt").write_text(screen)
    keys(tmux, "Enter")
    screen = tmux.wait("mode: plan (read-only")
    assert screen.count("mode: plan (") == 1
    tmux.wait("mode plan (Shift+Tab)")  # the status bar follows
