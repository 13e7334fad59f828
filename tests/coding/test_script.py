"""The script tool: Python calling heron's tools through the session's own path
(permissions, hooks, checkpoints, the ledger), bounded, with only its output and return
value entering the context (docs/script.md)."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from heron.ai.providers.faux import FauxProvider, FauxReply, serialise_request, text, tool_call
from heron.ai.types import Context, ToolCall, ToolResultMessage, UserMessage
from heron.coding.assembly import assemble_session
from heron.coding.mcp.connection import Timeouts
from heron.coding.mcp.manager import McpManager
from heron.coding.mcp.setup import mcp_tools
from heron.coding.runtime import CodingSession
from heron.coding.session_spec import SessionSpec, StoreSpec
from heron.coding.settings import settings_from_dict
from heron.context.records.ledger import LEDGER_CUSTOM_TYPE
from heron.session.entries import CustomEntry, MessageEntry
from heron.session.store import SessionStore
from tests.coding.test_mcp import stdio


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    proj = tmp_path / "proj"
    proj.mkdir()
    for i in range(3):
        (proj / f"m{i}.py").write_text("".join(f"def f{j}():\n    return {j}\n" for j in range(i + 1)))
    return proj


def session(project: Path, faux: FauxProvider, settings: dict[str, Any] | None = None) -> CodingSession:
    store = SessionStore.create(project)
    return CodingSession(cwd=project, model=faux.model(), store=store, settings=settings_from_dict(settings or {}))


async def run_script(
    project: Path, faux: FauxProvider, code: str, settings: dict[str, Any] | None = None, **args: Any
) -> tuple[CodingSession, ToolResultMessage, list[Context]]:
    seen: list[Context] = []
    replies = [tool_call("script", {"code": code, **args}), text("done")]

    def reply(context: Context) -> Any:
        seen.append(context)
        return replies.pop(0)

    faux.set_fallback(reply)
    s = session(project, faux, settings)
    await s.prompt("go")
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    return s, result, seen


async def test_inner_calls_return_values_and_stay_out_of_the_context(project: Path, faux: FauxProvider) -> None:
    code = (
        "sizes = {}\n"
        "for name in sorted(bash('ls').split()):\n"
        "    sizes[name] = read(name).count('def ')\n"
        "print('files:', len(sizes))\n"
        "sizes\n"
    )
    _, result, seen = await run_script(project, faux, code)
    assert not result.is_error, result.text()
    assert result.text() == 'files: 3\n\nReturn value:\n{"m0.py": 1, "m1.py": 2, "m2.py": 3}'
    calls = result.details["inner_calls"]
    assert [c["tool"] for c in calls] == ["bash", "read", "read", "read"]
    assert calls[1]["id"] == f"{result.tool_call_id}.2" and "def f0" in calls[1]["text"]
    # the next request carries the script's result, not the reads
    sent = serialise_request(seen[-1])
    assert "files: 3" in sent and "return 2" not in sent


def ledger(s: CodingSession) -> list[dict[str, Any]]:
    return [e.data for e in s.store.entries() if isinstance(e, CustomEntry) and e.custom_type == LEDGER_CUSTOM_TYPE]


async def test_a_deny_rule_raises_inside_the_script_and_is_in_the_ledger(project: Path, faux: FauxProvider) -> None:
    (project / "secrets").mkdir()
    (project / "secrets" / "key.txt").write_text("hunter2\n")
    (project / ".heron").mkdir()
    (project / ".heron" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(secrets/**)"]}}))
    code = (
        "try:\n"
        "    read('secrets/key.txt')\n"
        "except ToolError as error:\n"
        "    print('refused:', error)\n"
        "read('m0.py').splitlines()[0]\n"
    )
    s, result, seen = await run_script(project, faux, code)
    assert not result.is_error, result.text()
    assert "refused: Permission denied: reading" in result.text()
    assert 'deny rule "Read(secrets/**)"' in result.text()
    assert result.text().endswith('Return value:\n"def f0():"')
    denied = [r for r in ledger(s) if r["kind"] == "permission" and r["detail"]["decision"] == "deny"]
    assert [r["ref"] for r in denied] == [f"{result.tool_call_id}.1"] and denied[0]["tool"] == "read"
    assert denied[0]["detail"]["rule"] == "Read(secrets/**)"
    assert "hunter2" not in serialise_request(seen[-1])
    assert result.details["inner_calls"][0]["is_error"] is True


async def test_a_pre_tool_use_hook_sees_the_inner_bash_call(project: Path, faux: FauxProvider) -> None:
    seen_by_hook = project.parent / "hook.jsonl"
    hook = {"type": "command", "command": f"cat >> {seen_by_hook}; echo >> {seen_by_hook}"}
    settings_file = Path(os.environ["HERON_HOME"]) / "settings.json"
    settings_file.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [hook]}]}}))
    _, result, _ = await run_script(project, faux, "bash('echo from-the-script')")
    assert not result.is_error, result.text()
    payloads = [json.loads(line) for line in seen_by_hook.read_text().splitlines() if line.strip()]
    assert [p["tool_input"]["command"] for p in payloads] == ["echo from-the-script"]
    assert payloads[0]["tool_name"] == "bash"


async def test_the_scripts_environment_has_no_api_keys(
    project: Path, faux: FauxProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-scripts")
    monkeypatch.setenv("HARMLESS_VALUE", "visible")
    code = "import os\n[os.environ.get('OPENAI_API_KEY'), os.environ.get('HARMLESS_VALUE')]"
    _, result, _ = await run_script(project, faux, code)
    assert result.text() == 'Return value:\n[null, "visible"]'


async def test_an_endless_loop_is_ended_at_its_timeout(project: Path, faux: FauxProvider) -> None:
    started = time.monotonic()
    _, result, _ = await run_script(project, faux, "print('spinning')\nwhile True:\n    pass", timeout=1)
    assert time.monotonic() - started < 10
    assert result.is_error and result.details["timed_out"]
    assert result.text() == "spinning\n\nScript timed out after 1 seconds (0 tool calls ran)"


async def test_the_longest_timeout_is_the_setting(project: Path, faux: FauxProvider) -> None:
    settings = {"script": {"maxTimeoutMs": 1000}}
    _, result, _ = await run_script(project, faux, "import time\ntime.sleep(30)", settings, timeout=600)
    assert result.text().endswith("(the longest allowed: script.maxTimeoutMs in the settings)")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


@pytest.mark.parametrize("holds_output", [True, False])
async def test_a_background_process_is_not_left_behind(project: Path, faux: FauxProvider, holds_output: bool) -> None:
    output = "" if holds_output else ", stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL"
    # found by its command line: in the sandbox the script's pids are those of its own namespace
    marker = f"{60 + os.getpid() % 1000 / 1000:.3f}"
    code = f"import subprocess\nchild = subprocess.Popen(['sleep', '{marker}']{output})\nchild.pid\n"
    _, result, _ = await run_script(project, faux, code)
    assert isinstance(json.loads(result.text().split("Return value:\n")[1]), int)
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name)) and _runs(p, marker)]
    assert result.details["exit_code"] == 0


def _runs(proc: Path, marker: str) -> bool:
    try:
        return (proc / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode()
    except OSError:
        return False


async def test_ten_thousand_calls_stop_at_the_cap(project: Path, faux: FauxProvider) -> None:
    code = "for i in range(10000):\n    try:\n        read('m0.py')\n    except BaseException:\n        pass\n"
    _, result, _ = await run_script(project, faux, code)
    assert result.is_error and result.details["call_limit_reached"]
    assert len(result.details["inner_calls"]) == 200
    assert "it asked for more than 200 tool calls (the cap per script, script.maxCalls in the settings)" in (
        result.text()
    )


async def test_the_cap_is_a_setting(project: Path, faux: FauxProvider) -> None:
    _, result, _ = await run_script(project, faux, "for i in range(5):\n    read('m0.py')", {"script": {"maxCalls": 3}})
    assert len(result.details["inner_calls"]) == 3 and "more than 3 tool calls" in result.text()


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("print('hi'\n", "The script does not compile:\n"),
        ("object()", "The script's return value (object) cannot be given back as JSON"),
        ("print('before')\nimport os\nos._exit(3)", "before\n\nThe script's process exited with code 3 before it"),
        ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", "was killed by signal SIGKILL before it finished"),
        ("import sys\nsys.exit(4)", "The script called sys.exit(4)"),
        ("call('script', code='1')", "no tool 'script' in this session"),
        ("read(path=None, offset=object())", "the arguments of this call cannot be sent as JSON"),
    ],
)
async def test_bad_input_is_a_clear_error(project: Path, faux: FauxProvider, code: str, expected: str) -> None:
    _, result, _ = await run_script(project, faux, code)
    assert result.is_error, result.text()
    assert expected in result.text()


async def test_an_exception_shows_the_last_frames_of_its_traceback(project: Path, faux: FauxProvider) -> None:
    code = "def deep(n):\n    return deep(n - 1) if n else 1 / 0\n\ndeep(20)\n"
    _, result, _ = await run_script(project, faux, code)
    assert result.is_error
    text_ = result.text()
    assert text_.startswith("The script raised:\nTraceback (last 6 frames):\n")
    assert 'File "<script>", line 2, in deep\n    return deep(n - 1) if n else 1 / 0' in text_
    assert "[Previous line repeated 3 more times]" in text_  # 6 frames: 1 + 3 repeated + 2 shown
    assert text_.endswith("ZeroDivisionError: division by zero")
    assert "heron_script_runner" not in text_ and "heron_tools" not in text_


async def test_the_setting_turns_the_tool_off(project: Path, faux: FauxProvider) -> None:
    on = session(project, faux)
    off = session(project, faux, {"script": {"enabled": False}})
    assert "script" in [t.name for t in on.tools] and "script" not in [t.name for t in off.tools]


async def test_abort_ends_the_script_and_everything_it_started(project: Path, faux: FauxProvider) -> None:
    started = project / "started"
    marker = f"{61 + os.getpid() % 1000 / 1000:.3f}"  # found by its command line (the sandbox has its own pids)
    code = (
        "import subprocess, time\n"
        f"child = subprocess.Popen(['sleep', '{marker}'], stdout=subprocess.DEVNULL, start_new_session=False)\n"
        f"open({str(started)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    replies = [tool_call("script", {"code": code}), text("stopped")]
    faux.set_fallback(lambda context: replies.pop(0))
    s = session(project, faux)
    run = asyncio.create_task(s.prompt("go"))
    for _ in range(200):
        if started.exists() and started.read_text():
            break
        await asyncio.sleep(0.05)
    begun = time.monotonic()
    s.abort()
    await run
    assert time.monotonic() - begun < 5
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and result.details["aborted"] and result.text().endswith("Script aborted")
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and alive(int(p.name)) and _runs(p, marker)]


async def test_a_sub_agent_runs_scripts_through_its_own_path(project: Path, faux: FauxProvider) -> None:
    """The child has the parent's tools (script among them); its script's calls meet the
    child's permission rules and land in the child's session."""
    (project / ".heron").mkdir()
    (project / ".heron" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["Read(m2.py)"]}}))
    code = (
        "out = []\n"
        "for name in ('m1.py', 'm2.py'):\n"
        "    try:\n"
        "        out.append(read(name).count('def '))\n"
        "    except ToolError as error:\n"
        "        out.append(str(error)[:18])\n"
        "out\n"
    )
    script = {
        "survey": [
            FauxReply(
                content=[
                    ToolCall(
                        id="t1", name="task", arguments={"description": "count the functions here", "prompt": "count"}
                    )
                ]
            ),
            text("parent done"),
        ],
        "count": [tool_call("script", {"code": code}, call_id="k1")],
    }
    child_requests: list[Context] = []

    def reply(context: Context) -> FauxReply:
        last = next(m for m in reversed(context.messages) if isinstance(m, UserMessage)).text()
        if last == "count" and child_requests:
            child_requests.append(context)
            result = next(m for m in context.messages if isinstance(m, ToolResultMessage))
            return text(result.text())
        if last == "count":
            child_requests.append(context)
        return script[last].pop(0)

    faux.set_fallback(reply)
    spec = SessionSpec(cwd=project, model=faux.model(), store=StoreSpec.new(), settings=settings_from_dict({}))
    parent = assemble_session(spec)
    await parent.prompt("survey")
    assert "script" in [t.name for t in child_requests[0].tools or []]
    task_result = next(m for m in parent.messages if isinstance(m, ToolResultMessage))
    assert task_result.text() == 'Return value:\n[2, "Permission denied:"]'
    child = SessionStore.open(Path(task_result.details["session"]), read_only=True)
    recorded = [
        e.message
        for e in child.entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, ToolResultMessage) and e.message.tool_name == "script"
    ]
    assert [c["tool"] for c in recorded[0].details["inner_calls"]] == ["read", "read"]
    denied = [e.data for e in child.entries() if isinstance(e, CustomEntry) and e.data.get("kind") == "permission"]
    assert any(r["ref"] == "k1.2" and r["detail"]["decision"] == "deny" for r in denied)


async def test_mcp_tools_are_called_by_server_and_name(project: Path, faux: FauxProvider, tmp_path: Path) -> None:
    manager = McpManager([stdio("d", "stdio")], Timeouts(connect=30, call=20))
    manager.start()
    try:
        tools, _ = mcp_tools(manager, 200_000)
        code = "[mcp('d', 'echo', text='hi', times=2), str(mcp('d', 'echo', text='x').details is None)]"
        replies = [tool_call("script", {"code": code}), text("done")]
        faux.set_fallback(lambda context: replies.pop(0))
        s = CodingSession(
            cwd=project,
            model=faux.model(),
            store=SessionStore.create(project),
            settings=settings_from_dict({}),
            extra_tools=tools,
        )
        await s.prompt("go")
    finally:
        manager.close()
    result = next(m for m in s.messages if isinstance(m, ToolResultMessage))
    assert not result.is_error, result.text()
    assert result.text().startswith('Return value:\n["hi hi", ')
    assert [c["tool"] for c in result.details["inner_calls"]] == ["mcp__d__echo", "mcp__d__echo"]


async def test_the_record_keeps_the_head_of_long_texts(project: Path, faux: FauxProvider) -> None:
    code = "write('long.txt', 'x' * 50_000)\nlen(bash('head -c 5000 long.txt'))"
    _, result, _ = await run_script(project, faux, code)
    assert result.text() == "Return value:\n5000"
    assert (project / "long.txt").read_text() == "x" * 50_000  # the tool got it whole
    written, ran = result.details["inner_calls"]
    assert written["arguments"]["content"] == "x" * 2000 + "... [50,000 chars]"
    assert ran["text"] == "x" * 2000 and ran["chars"] == 5000 and ran["details"]["exit_code"] == 0


async def test_a_script_reads_what_the_model_already_read_and_the_model_keeps_its_stub(
    project: Path, faux: FauxProvider
) -> None:
    replies = [
        tool_call("read", {"path": "m1.py"}, call_id="r1"),
        tool_call("script", {"code": "read('m1.py').count('def ')"}, call_id="k1"),
        tool_call("read", {"path": "m1.py"}, call_id="r2"),
        text("done"),
    ]
    faux.set_fallback(lambda context: replies.pop(0))
    s = session(project, faux)
    await s.prompt("go")
    by_id = {m.tool_call_id: m for m in s.messages if isinstance(m, ToolResultMessage)}
    assert by_id["k1"].text() == "Return value:\n2"  # the file's text, not the "unchanged" stub
    assert by_id["r2"].text().startswith("[File unchanged since you last read it")  # the model's read still is
