"""The one-shot ``heron -p`` path loads only what it uses (issue 23): no screen (TUI, rich,
prompt_toolkit), no MCP code without a config file, no tracing without ``--otel`` or an OTLP
endpoint, no recall index, no shadow-repository code in a run that takes no snapshot, none of
what only a compaction, an extension, a checked context rule or a judged bash command needs,
and no pydantic in a run that calls no tool (the tools' schemas are precomputed; their models
load when a call's arguments are validated), no ``importlib.metadata`` when no installed
distribution declares an extension entry point, and no ``uuid`` (nor ``platform``) or ``secrets``.
Checked on the real command against a local OpenAI-format server, through ``sys.modules`` at
the end of the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.http_server import LocalServer, Reply
from tests.support.sse import openai_reply

# Module names (and their submodules) the one-shot path must not import.
FORBIDDEN = (
    "heron.cli.tui",
    "heron.cli.modes.interactive",
    "prompt_toolkit",
    "rich",
    "click",
    "pygments",
    "httpx._main",
    "heron.coding.mcp.config",
    "heron.coding.mcp.setup",
    "heron.coding.mcp.manager",
    "heron.coding.tracing",  # tracing_switch (the check) is not under it: the names differ
    "opentelemetry",
    "heron.session.recall",
    "heron.cli.search_cmd",
    # Loaded with the first compaction or summary, never below the soft mark:
    "heron.context.compaction.compactor",
    "heron.context.compaction.reinject",
    "heron.context.view.sent_view",
    "heron.context.compaction.summary.shared_summary",
    "heron.context.compaction.summary.summariser",
    "heron.context.compaction.summary.summary_chunks",
    "heron.context.compaction.summary.summary_text",
    # Loaded when the context rules are checked (HERON_CHECK_CONTEXT, context.checkInvariants):
    "heron.context.rules.invariants",
    # Loaded with the first extension:
    "heron.coding.extensions.api",
    "heron.coding.extensions.compaction",
    "heron.coding.extensions.tools",
    "heron.coding.extensions.verify",
    # Loaded with the first bash command a permission rule judges:
    "heron.coding.permissions.shell",
    "heron.coding.permissions.hidden",
    "heron.coding.permissions.wrappers",
    # Loaded with the first bash command or script (the tools are offered without them):
    "heron.coding.tools.process",
    "heron.coding.tools.terminal",
    "heron.coding.tools.bash_output",
    "heron.coding.tools.script_calls",
    # Loaded with the first tool results and the first sub-agent:
    "heron.context.tool_output.results",
    "heron.context.tool_output.json_preview",
    "heron.coding.subagents.spawn",
    "heron.coding.subagents.result",
    # Loaded with the first skill, template or agent file (the test's project has none):
    "heron.coding.frontmatter",
    "html.entities",  # the skills list escapes with html: loaded with the first skill
    # Read only when a distribution's entry_points.txt names heron.extensions (with zipfile, csv):
    "importlib.metadata",
    "zipfile",
    "csv",
    # Session and entry ids are made from os.urandom, without uuid (whose import runs platform)
    # or secrets (and hmac with it):
    "uuid",
    "platform",
    "secrets",
    "hmac",
)
# Without a session file there is nothing to rewind: none of the checkpoint machinery either.
NO_SNAPSHOT = (
    "heron.coding.checkpoints.repo",
    "heron.coding.checkpoints.git_backend",
    "heron.coding.checkpoints.dulwich_backend",
    "heron.coding.checkpoints.prune",
    "heron.coding.checkpoints.rewind",
    "dulwich",
)
# The tools' parameter models, and pydantic with them, load when a call's arguments are
# first validated: a run whose model calls no tool needs neither.
NO_TOOL_CALL = (
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "heron.agent.params",
    "heron.coding.tools.params",
)

PROBE = (
    "import json, os, runpy, sys\n"
    "sys.argv = ['heron', *json.loads(os.environ['PROBE_ARGS'])]\n"
    "try:\n    runpy.run_module('heron.cli.main', run_name='__main__')\nexcept SystemExit as exc:\n"
    "    code = exc.code\n"
    "names = sorted(n for n, m in sys.modules.items() if m is not None)\n"
    "with open(os.environ['PROBE_OUT'], 'w') as out:\n    json.dump(names, out)\n"
)


def loaded_by_print(
    tmp_path: Path, server: LocalServer, *flags: str, replies: Sequence[Reply] = (openai_reply("ok"),)
) -> set[str]:
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    (cwd / "a.py").write_text("x = 1\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith(("HERON_", "OTEL_"))}
    out = tmp_path / "modules.json"
    args = [*flags, "--base-url", server.url + "/v1", "--model", "m", "-p", "hi"]
    env.update(HERON_HOME=str(home), PROBE_ARGS=json.dumps(args), PROBE_OUT=str(out))
    server.queue(*replies)
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert run.stdout == "ok\n", run.stderr
    return set(json.loads(out.read_text()))


def offending(loaded: set[str], prefixes: tuple[str, ...]) -> list[str]:
    return sorted(name for name in loaded if any(name == p or name.startswith(p + ".") for p in prefixes))


def test_print_without_a_session_loads_no_screen_mcp_tracing_recall_or_checkpoint_code(
    tmp_path: Path, local_server: LocalServer
) -> None:
    loaded = loaded_by_print(tmp_path, local_server, "--no-session")
    assert "heron.coding.runtime" in loaded and "heron.cli.modes.print_mode" in loaded  # it did run
    assert offending(loaded, FORBIDDEN + NO_SNAPSHOT + NO_TOOL_CALL) == []


def test_print_with_a_session_loads_checkpoints_but_no_screen_mcp_tracing_or_recall(
    tmp_path: Path, local_server: LocalServer
) -> None:
    loaded = loaded_by_print(tmp_path, local_server)
    assert "heron.coding.checkpoints.repo" in loaded  # the turn's snapshot was taken
    assert offending(loaded, FORBIDDEN + NO_TOOL_CALL) == []


def test_a_tool_call_loads_the_parameter_models_and_validates_with_them(
    tmp_path: Path, local_server: LocalServer
) -> None:
    bad = ("call_1", "read", {"path": "a.py", "offest": 2})  # a misspelt argument: refused, the model is told
    good = ("call_2", "read", {"path": "a.py"})
    replies = (openai_reply(calls=[bad]), openai_reply(calls=[good]), openai_reply("ok"))
    loaded = loaded_by_print(tmp_path, local_server, "--no-session", replies=replies)
    assert {"pydantic", "heron.coding.tools.params"} <= loaded
    requests = [r.json() for r in local_server.requests]
    assert len(requests) == 3
    refused, result = requests[1]["messages"][-1], requests[2]["messages"][-1]
    assert refused["role"] == "tool" and "offest: unexpected argument" in refused["content"]
    assert result["role"] == "tool" and "x = 1" in result["content"]
