"""Tools declare what they are (issue 22): a built-in read tool registered under another
name, and an extension's tool of kind ``read``, get what ``read`` gets - de-dup of
re-reads, pruning stubs that say how to read again, re-injection after a compaction,
``Read(...)`` permission rules and ACP's ``read`` kind - driven through a real
``CodingSession`` with the scripted provider, checked on the request the model receives."""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp.types as mcp_types
import pytest
from acp.schema import ToolCallStart

from heron.agent.tool_meta import PathUse, ToolCatalog, ToolMeta
from heron.ai.providers.faux import FauxProvider, FauxReply, text, tool_call
from heron.ai.types import Context, ToolCall, ToolResultMessage
from heron.cli.acp.updates import EventTranslator
from heron.coding.hooks import HookGroup, HookRunner, claude_tool_input
from heron.coding.mcp.config import ToolDeclaration, parse_server
from heron.coding.mcp.tools import declared_meta
from heron.coding.permissions import PermissionEngine
from heron.coding.runtime import CodingSession
from heron.coding.settings import settings_from_dict
from heron.coding.tools.read import ReadTool
from heron.context.compaction.summary.summary_text import is_summary_request
from heron.session.entries import CompactionEntry
from heron.session.store import SessionStore

UNCHANGED = "[File unchanged since you last read it"
REINJECTED = "Files you were working on before the history was compacted"

PEEK_EXTENSION = """
from pathlib import Path

from pydantic import BaseModel

from heron.coding.extensions.api import ToolResult


class Params(BaseModel):
    file: str


def register(api):
    @api.tool("peek", "Show a file's text", Params, kind="read", paths="file")
    async def peek(params):
        return ToolResult.text((Path(api.cwd) / params.file).read_text())
"""


class ViewFile(ReadTool):
    """The built-in read tool, registered under another name."""

    name = "view_file"


def renamed(s: CodingSession) -> tuple[str, str]:
    """``view_file`` in place of ``read``, as an extension's tool is added: the tool list and
    the system prompt that names it."""
    s.tools = [ViewFile(s.env), *(t for t in s.tools if not isinstance(t, ReadTool))]
    s.agent.set_tools(s.tools)
    s.system_prompt = s.render_system_prompt()
    s.agent.set_system_prompt(s.system_prompt)
    return "view_file", "path"


def extension(s: CodingSession) -> tuple[str, str]:
    folder = s.cwd / ".heron" / "extensions"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "peek.py").write_text(textwrap.dedent(PEEK_EXTENSION))
    assert s.extensions.load(trusted=True) == []
    return "peek", "file"


Setup = Callable[[CodingSession], tuple[str, str]]


def project_with_files(tmp_path: Path) -> tuple[Path, Path]:
    project, home = tmp_path / "proj", tmp_path / "home"
    (project / "secrets").mkdir(parents=True)
    home.mkdir()
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n" * 20)
    (project / "big.txt").write_text("".join(f"line {i} of a file worth pruning\n" for i in range(400)))
    (project / "secrets" / "key.txt").write_text("hunter2\n")
    (home / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(secrets/**)"]}}))
    return project, home


def scripted(faux: FauxProvider, script: list[FauxReply]) -> None:
    def reply(context: Context) -> FauxReply:
        if is_summary_request(context):
            return text("## Goal\nlook at files")
        return script.pop(0)

    faux.set_fallback(reply)  # type: ignore[arg-type]


def open_session(
    project: Path, home: Path, faux: FauxProvider, store: SessionStore, setup: Setup
) -> tuple[CodingSession, str, str]:
    s = CodingSession(
        cwd=project,
        model=faux.model(context_window=128_000, max_tokens=8_192),
        store=store,
        home=home,
        settings=settings_from_dict({"compaction": {"keepRecentTokens": 1}}),
        tools=["bash", "edit", "write"],
    )
    tool, arg = setup(s)
    return s, tool, arg


def results(s: CodingSession) -> list[ToolResultMessage]:
    return [m for m in s.messages if isinstance(m, ToolResultMessage)]


@pytest.mark.parametrize("setup", [renamed, extension], ids=["renamed-read", "extension-read"])
async def test_a_read_kind_tool_gets_what_read_gets(tmp_path: Path, faux: FauxProvider, setup: Setup) -> None:
    project, home = project_with_files(tmp_path)
    store = SessionStore.create(project, home=home)
    s, tool, arg = open_session(project, home, faux, store, setup)
    assert s.tool_catalog.kind(tool) == "read"
    assert s.tool_catalog.uses(ToolCall(id="c", name=tool, arguments={arg: "notes.txt"})) == [PathUse("notes.txt")]

    updates: list[Any] = []
    translator = EventTranslator(s.cwd, s.tool_catalog)
    s.subscribe(lambda event: updates.extend(translator.translate(event)))
    scripted(
        faux,
        [
            tool_call(tool, {arg: "notes.txt"}),
            text("read it. " + "A long answer that a summary will shorten. " * 100),
            tool_call(tool, {arg: "secrets/key.txt"}),
            text("not allowed. " + "Another long answer, for the summary to shorten. " * 100),
            tool_call(tool, {arg: "big.txt"}),
            text("big one"),
            tool_call(tool, {arg: "notes.txt"}),
            text("again"),
            text("after pruning"),
            text("after the compaction"),
        ],
    )
    await s.prompt("read notes.txt")
    assert "alpha" in results(s)[-1].text()

    # ACP: the call is a read of that file
    starts = [u for u in updates if isinstance(u, ToolCallStart)]
    assert (starts[0].kind, starts[0].title) == ("read", "Read notes.txt")
    assert [loc.path for loc in starts[0].locations or []] == [str(project / "notes.txt")]

    # the permission path rule Read(secrets/**) covers it
    await s.prompt("read the key")
    denied = results(s)[-1]
    assert denied.is_error and "Read(secrets/**)" in denied.text() and "hunter2" not in denied.text()

    # pruning: the stub says what was read and how to read it again (on the wire)
    await s.prompt("read big.txt")
    big = results(s)[-1].tool_call_id
    await s.prompt("read notes.txt again")
    again = results(s)[-1].text()
    if setup is renamed:  # the read tool's own de-dup answers the re-read
        assert again.startswith(UNCHANGED)
    s.policy.pruner.prune(s.messages, 0, keep_turns=0)  # what a pruning step records
    assert big in s.policy.decisions.stubs
    await s.prompt("go on")
    body = faux.payloads[-1]
    assert f"the result of {tool} big.txt" in body and "Read big.txt again if you need it." in body

    # compaction: the files read are listed and re-injected, current content
    (project / "notes.txt").write_text("delta\n" * 20)
    assert await s.compact() is not None
    compaction = next(e for e in reversed(s.store.entries()) if isinstance(e, CompactionEntry))
    assert "notes.txt" in compaction.details["readFiles"]
    await s.prompt("what now?")
    body = faux.payloads[-1]
    assert REINJECTED in body and '<file path=\\"notes.txt\\">\\ndelta' in body

    # a resumed process with the same tools derives the same request
    view, prompt = s.policy.view(s.messages), s.system_prompt
    s._recorder.close()
    store.close()
    assert store.path is not None
    resumed, _, _ = open_session(project, home, faux, SessionStore.open(store.path), setup)
    assert resumed.system_prompt == prompt
    assert resumed.policy.view(resumed.messages) == view


# --- declarations from extensions and MCP servers ----------------------------------------------


def test_an_mcp_server_entry_declares_its_tools(tmp_path: Path) -> None:
    entry = {"command": "srv", "heronTools": {"read_text_file": {"kind": "read", "path": "path"}}}
    server = parse_server("fs", entry, "user", Path("mcp.json"))
    assert server.tools == {"read_text_file": ToolDeclaration("read", "path")}
    assert server.to_json()["heronTools"] == {"read_text_file": {"kind": "read", "path": "path"}}
    remote = mcp_types.Tool(name="read_text_file", input_schema={"type": "object"})
    meta = declared_meta(remote, server.tools["read_text_file"])
    assert (meta.kind, meta.uses({"path": "a.txt"})) == ("read", [PathUse("a.txt")])
    write = declared_meta(remote, ToolDeclaration("write", "target"))
    assert write.uses({"target": "b.txt"}) == [PathUse("b.txt", "write")] and write.changes_files
    # what a server says of a tool of its own: read-only is a read of no known file
    hinted = mcp_types.Tool(
        name="q", input_schema={"type": "object"}, annotations=mcp_types.ToolAnnotations(read_only_hint=True)
    )
    assert (declared_meta(hinted, None).kind, declared_meta(hinted, None).paths) == ("read", None)
    assert declared_meta(remote, None).kind == "other"
    # a declared read tool is covered by Read(...) rules on its file
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    engine.tools = ToolCatalog([_Named("mcp__fs__read_text_file", meta)])
    engine.add_rules("deny", ["Read(secrets/**)"], "test")
    assert engine.decide("mcp__fs__read_text_file", {"path": "secrets/k"}).behavior == "deny"
    assert engine.decide("mcp__fs__read_text_file", {"path": "src/a.py"}).behavior == "allow"


@pytest.mark.parametrize(
    "entry",
    [
        {"heronTools": []},
        {"heronTools": {"t": {"kind": "reading"}}},
        {"heronTools": {"t": {"kind": "read", "path": 3}}},
    ],
)
def test_a_bad_declaration_is_an_error_in_the_entry(entry: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="heronTools"):
        parse_server("fs", {"command": "srv", **entry}, "user", Path("mcp.json"))


def test_an_extension_tool_with_an_unknown_kind_is_refused(tmp_path: Path, faux: FauxProvider) -> None:
    project, home = project_with_files(tmp_path)
    folder = project / ".heron" / "extensions"
    folder.mkdir(parents=True)
    (folder / "bad.py").write_text(PEEK_EXTENSION.replace('kind="read"', 'kind="reading"'))
    s = CodingSession(
        cwd=project,
        model=faux.model(),
        store=SessionStore.in_memory(project),
        home=home,
        settings=settings_from_dict({}),
    )
    [problem] = s.extensions.load(trusted=True)
    assert "unknown tool kind 'reading'" in problem
    assert "peek" not in [t.name for t in s.tools]


def test_hook_matchers_know_a_renamed_read_tool_as_read(tmp_path: Path) -> None:
    groups = [HookGroup("PreToolUse", re.compile("Read"), ())]
    runner = HookRunner(groups, tmp_path, dict, ToolCatalog([_Named("view_file", ViewFile.meta)]))
    assert runner.has("PreToolUse", "view_file") and not runner.has("PreToolUse", "bash")
    assert claude_tool_input(ViewFile.meta, {"path": "a.py"}, tmp_path)["file_path"] == str(tmp_path / "a.py")


class _Named:
    def __init__(self, name: str, meta: ToolMeta) -> None:
        self.name, self.meta = name, meta
