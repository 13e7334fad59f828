"""The interactive footer shows the window heron plans for: after a server rejects a
request as too long and heron learns its smaller window, the footer said "of 128k" (the
model's configured window) for the rest of the session. Checked with the controller and
a recording console (the faux provider), and through the real program in a
pseudo-terminal against a local server, before and after a restart."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from heron.ai.providers.faux import FauxProvider, error, text
from heron.cli.tui.controller import Controller
from heron.cli.tui.footer import window_label
from tests.cli import test_interactive as base
from tests.cli.test_interactive import answer, exit_with_ctrl_d
from tests.cli.tui_helpers import make_app, recording_console, submit
from tests.support.http_server import LocalServer, json_reply

dirs = base.dirs
spawn = base.spawn

TOO_LONG = (
    "This model's maximum context length is 16384 tokens. However, you requested 20000 tokens. "
    "Please reduce the length of the messages."
)
FOOTER = re.compile(r"ctx \d+% of (\d+(?:\.\d)?)k")


def shown_windows(out: str) -> list[float]:
    return [float(k) for k in FOOTER.findall(out)]


def test_the_label_names_a_learned_window_and_the_configured_one() -> None:
    assert window_label(128_000, 128_000) == "128k"
    assert window_label(16_000, 128_000) == "16k (learned; configured 128k)"


async def test_the_footer_shows_the_learned_window(tmp_path: Path, home: Path, faux: FauxProvider) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    faux.queue(text("first"), error(TOO_LONG, 400), text("second"))
    c = Controller(make_app(project, home, faux), recording_console())
    assert shown_windows(await submit(c, "hi")) == [128.0]
    out = await submit(c, "and again")
    learned = c.session.policy.sizes.window
    assert learned < 16_384 and "second" in out
    assert shown_windows(out)[-1] == round(learned / 1000, 1) and "of 128k" not in out.split("second")[-1]
    session = await submit(c, "/session")
    assert f"of {learned:,} tokens" in session
    model = await submit(c, "/model")
    assert "(learned; configured 128k)" in model


def test_the_footer_shows_the_learned_window_in_a_terminal_and_after_a_restart(
    spawn: Any, local_server: LocalServer
) -> None:
    local_server.queue(json_reply(400, {"error": {"message": TOO_LONG, "code": "context_length_exceeded"}}))
    local_server.queue(answer("Short answer."), answer("Still short."))
    child = spawn()
    child.send("hello\r")
    child.expect("Short answer.")
    child.expect(r"ctx \d+% of (\d+(?:\.\d)?k)")
    first = child.match.group(1)
    assert first != "128k" and float(first[:-1]) < 16.4
    exit_with_ctrl_d(child)
    again = spawn("--continue")  # the learned window is in the session: a new process shows it too
    again.send("more\r")
    again.expect("Still short.")
    again.expect(r"ctx \d+% of (\d+(?:\.\d)?k)")
    assert again.match.group(1) == first
    exit_with_ctrl_d(again)
