"""Session text never drives the terminal (issue 37): the model's answer printed by
``heron -p`` on a terminal, and ``heron sessions tree`` / ``search`` / ``list`` over a
session holding such text, show OSC 52 (clipboard), clear-screen, title, C1 and
backspace/CR tricks as text. Checked on the bytes a real pseudo-terminal receives;
piped, ``-p`` keeps the model's text byte for byte, and json stays JSON
(docs/interactive.md, "Nothing from outside heron controls the terminal")."""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path

import pytest

from heron.cli.terminal_text import json_visible, visible, visible_stream
from tests.cli.test_print_json_e2e import TIMEOUT, Project, heron_command, openai_args, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

pexpect = pytest.importorskip("pexpect")

__all__ = ["project"]

# write the clipboard, clear the screen, set the title, an 8-bit CSI, a bell, backspaces
# over text, a lone CR that would let the line overwrite itself
HOSTILE = (
    "before \x1b]52;c;ZXZpbA==\x07 clear\x1b[2J \x1b]0;pwned-title\x07 c1\x9b31m "
    "bell\x07 back\x08\x08 cr\rover after\tend"
)
SHOWN = [
    b"^[]52;c;ZXZpbA==^G",
    b"clear^[[2J",
    b"^[]0;pwned-title^G",
    b"c1<U+009B>31m",
    b"bell^G",
    b"back^H^H",
    b"cr^Mover",
    b"after\tend",
]
FILE_TEXT = "file \x1b]52;c;ZmlsZQ==\x07 text \x1b[H\x1b[2J"
PROMPT = "look \x1b]0;prompt-title\x07 now"


def on_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[bytes, int]:
    """Everything ``argv`` writes to a pseudo-terminal (its stdin, stdout and stderr), and
    its exit status."""
    child = pexpect.spawn(argv[0], argv[1:], cwd=str(cwd), env=env, timeout=TIMEOUT, dimensions=(50, 400))
    out: bytes = child.read()
    child.close()
    return out, int(child.exitstatus if child.exitstatus is not None else -1)


def assert_inert(out: bytes) -> None:
    """No byte a terminal would act on: no ESC, BEL, backspace, 8-bit C1, and CR only as
    the terminal's own line ending."""
    for raw in (b"\x1b", b"\x07", b"\x08", "\x9b".encode()):
        assert raw not in out, (raw, out)
    assert b"\r" not in out.replace(b"\r\n", b""), out


def hostile_session(project: Project, server: LocalServer) -> bytes:
    """``heron -p`` on a terminal: the model reads a file holding escapes, then answers
    with :data:`HOSTILE`. Returns what the terminal received."""
    (project.cwd / "evil.txt").write_text(FILE_TEXT)
    server.queue(openai_reply("", [("c1", "read", {"path": "evil.txt"})]), openai_reply(HOSTILE))
    out, status = on_terminal([*heron_command(), *openai_args(server), "-p", PROMPT], project.cwd, project.env)
    assert status == 0, out
    return out


def test_print_mode_on_a_terminal_shows_escapes_as_text(project: Project, local_server: LocalServer) -> None:
    out = hostile_session(project, local_server)
    assert_inert(out)
    for shown in SHOWN:
        assert shown in out, (shown, out)
    # the model received the file's bytes as they are: only the screen is protected
    sent = json.dumps(local_server.requests[-1].json())
    assert json.dumps(FILE_TEXT)[1:-1] in sent


def test_print_mode_piped_keeps_the_models_text_and_json_stays_json(
    project: Project, local_server: LocalServer
) -> None:
    local_server.queue(openai_reply(HOSTILE))
    piped = subprocess.run(
        [*heron_command(), *openai_args(local_server), "-p", "go"],
        cwd=project.cwd,
        env=project.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == (HOSTILE + "\n").encode()  # a file redirect gets what the model wrote

    local_server.queue(openai_reply(HOSTILE))
    as_json = project.run(*openai_args(local_server), "--mode", "json", "-p", "again")
    assert as_json.code == 0, as_json.err
    events = as_json.lines()  # every line parses
    deltas = "".join(
        e["event"]["delta"] for e in events if e["type"] == "message_update" and "delta" in e.get("event", {})
    )
    assert deltas == HOSTILE  # the same value for a program
    for raw in ("\x1b", "\x07", "\x08", "\x9b"):
        assert raw not in as_json.out


def test_sessions_tree_search_and_list_show_escapes_as_text(project: Project, local_server: LocalServer) -> None:
    hostile_session(project, local_server)
    (path,) = project.session_files()
    tree, status = on_terminal([*heron_command(), "sessions", "tree", str(path)], project.cwd, project.env)
    assert status == 0, tree
    assert_inert(tree)
    assert b"look ^[]0;prompt-title^G now" in tree  # the user's message
    assert b"file ^[]52;c;ZmlsZQ==^G text ^[[H^[[2J" in tree  # the read's result
    assert b"^[]52;c;ZXZpbA==^G" in tree and b"<U+009B>" in tree  # the answer

    found, status = on_terminal([*heron_command(), "sessions", "search", "pwned"], project.cwd, project.env)
    assert status == 0, found
    assert_inert(found)
    assert b"^[]0;**pwned**-title^G" in found  # the hit's words marked as ever

    listed, status = on_terminal([*heron_command(), "sessions", "list"], project.cwd, project.env)
    assert status == 0, listed
    assert_inert(listed)
    assert b"look ^[]0;prompt-title^G now" in listed  # the title: the first message

    as_json, status = on_terminal([*heron_command(), "sessions", "search", "pwned", "--json"], project.cwd, project.env)
    assert status == 0, as_json
    assert_inert(as_json)
    hits = json.loads(as_json.decode().replace("\r\n", "\n"))
    assert any("\x1b]0;**pwned**-title\x07" in hit["snippet"] for hit in hits)  # the same value


def test_visible_and_json_visible() -> None:
    assert visible("a\r\nb\tc\x1b[2Jd\x7f\u202ee") == "a\nb\tc^[[2Jd^?<U+202E>e"
    encoded = json.dumps({"t": "x\x9b1m\u202ey\x1b"}, ensure_ascii=False)
    escaped = json_visible(encoded)
    assert "\x9b" not in escaped and "\u202e" not in escaped and "\x1b" not in escaped
    assert json.loads(escaped) == {"t": "x\x9b1m\u202ey\x1b"}
    under = io.StringIO()
    stream = visible_stream(under)
    print("one\x1b]52;c;eA==\x07", file=stream)
    assert under.getvalue() == "one^[]52;c;eA==^G\n"
