from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from heron.coding.context_files import ContextFile
from heron.coding.prompt import (
    DEFAULT_TOOLS,
    TOOL_SUMMARIES,
    PromptFiles,
    build_system_prompt,
    first_sentence,
    guidelines,
    load_prompt_files,
    request_overhead_chars,
    resolve_prompt_text,
)
from heron.coding.skills import Skill
from heron.coding.tools import ToolEnv, create_tools

DATE = dt.date(2025, 3, 14)
CWD = Path("/work/project")


def skill(name: str, disabled: bool = False, description: str = "Does things.") -> Skill:
    path = Path(f"/skills/{name}/SKILL.md")
    return Skill(name, description, path, path.parent, "user", disabled)


def context(path: str, content: str) -> ContextFile:
    return ContextFile(Path(path), content, len(content), len(content), False)


def test_default_prompt_sections_in_order() -> None:
    prompt = build_system_prompt(
        cwd=CWD,
        date=DATE,
        context_files=[context("/work/AGENTS.md", "Use tabs."), context("/work/project/AGENTS.md", "Use pytest.")],
        skills=[skill("deploy")],
    )
    assert prompt.startswith("You are heron, a coding agent working in the user's project")
    positions = [
        prompt.index(marker)
        for marker in (
            "Available tools:",
            "Guidelines:",
            "# Project context",
            "## /work/AGENTS.md\n\nUse tabs.",
            "## /work/project/AGENTS.md\n\nUse pytest.",
            "# Skills",
            "Current date: 2025-03-14 (Friday)",
            "Current working directory: /work/project",
        )
    ]
    assert positions == sorted(positions)
    assert prompt.endswith("Current working directory: /work/project\n")


def test_tools_are_listed_with_one_line_each_in_the_given_order() -> None:
    prompt = build_system_prompt(cwd=CWD, date=DATE, tools=["bash", "read", ("deploy", "Ship the build")])
    block = prompt.split("Available tools:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert [line.split(":")[0] for line in block] == ["- bash", "- read", "- deploy"]
    assert block[2] == "- deploy: Ship the build"
    assert all(len(line) > len("- bash: ") for line in block)


def test_tool_summary_override() -> None:
    prompt = build_system_prompt(cwd=CWD, date=DATE, tools=["read", "mine"], tool_summaries={"mine": "Custom tool"})
    assert "- mine: Custom tool" in prompt


def test_guidelines_never_name_inactive_tools() -> None:
    rules = " ".join(guidelines(list(DEFAULT_TOOLS)))
    for absent in ("grep", "find", "ls"):
        assert f"with {absent}" not in rules and f"{absent}/" not in rules
    assert "Read a file before editing it" in rules
    assert "Change existing files with edit; use write only" in rules
    assert "bash is non-interactive" in rules


def test_guidelines_with_search_tools() -> None:
    rules = " ".join(guidelines(["read", "grep", "find", "ls", "bash"]))
    assert "Explore the project with grep/find/ls rather than bash commands" in rules
    assert "respect .gitignore" in rules
    assert "respect .gitignore" not in " ".join(guidelines(["ls"]))
    only_grep = " ".join(guidelines(["read", "grep"]))
    assert "grep" in only_grep and "find/" not in only_grep and "bash" not in only_grep


def test_guidelines_depend_on_the_pairs() -> None:
    read_only = " ".join(guidelines(["read"]))
    assert "before editing" not in read_only and "edit" not in read_only and "bash" not in read_only
    write_only = " ".join(guidelines(["write"]))
    assert "write replaces a whole file" in write_only
    assert "Read a file before editing" not in " ".join(guidelines(["edit"]))


def test_no_tools() -> None:
    prompt = build_system_prompt(cwd=CWD, date=DATE, tools=[])
    assert "No tools are available" in prompt and "Available tools" not in prompt


def test_skills_block_lists_only_model_invocable_skills_escaped() -> None:
    prompt = build_system_prompt(
        cwd=CWD,
        date=DATE,
        skills=[skill("visible", description="Use <this> & that"), skill("hidden", disabled=True)],
    )
    assert "<name>visible</name>" in prompt
    assert "<description>Use &lt;this&gt; &amp; that</description>" in prompt
    assert "<location>/skills/visible/SKILL.md</location>" in prompt
    assert "hidden" not in prompt
    assert "read its file with the read tool" in prompt


def test_skills_block_needs_a_way_to_read() -> None:
    assert "# Skills" not in build_system_prompt(cwd=CWD, date=DATE, tools=["edit"], skills=[skill("a")])
    with_bash = build_system_prompt(cwd=CWD, date=DATE, tools=["bash"], skills=[skill("a")])
    assert "print its file with bash (cat)" in with_bash
    assert "# Skills" not in build_system_prompt(cwd=CWD, date=DATE, skills=[skill("h", disabled=True)])


def test_deterministic_and_date_is_fixed() -> None:
    def build() -> str:
        return build_system_prompt(
            cwd=CWD, date=DATE, skills=[skill("a")], context_files=[context("/a/AGENTS.md", "x")]
        )

    assert build() == build()
    assert "Current date: today" in build_system_prompt(cwd=CWD, date="today")
    assert "2025-03-14" in build_system_prompt(cwd=CWD, date=dt.datetime(2025, 3, 14, 23, 59))


def test_system_md_replaces_the_body_but_keeps_session_facts() -> None:
    files = PromptFiles(system="You are a pirate.\n", system_path=Path("/x/SYSTEM.md"))
    prompt = build_system_prompt(
        cwd=CWD, date=DATE, prompt_files=files, context_files=[context("/a/AGENTS.md", "rules")], skills=[skill("s")]
    )
    assert prompt.startswith("You are a pirate.\n\n")
    assert "You are heron" not in prompt and "Guidelines:" not in prompt
    assert "rules" in prompt and "<name>s</name>" in prompt and "Current date: 2025-03-14" in prompt


def test_flag_beats_system_md_and_both_appends_apply_in_order() -> None:
    files = PromptFiles(system="from file", append="appended by file")
    prompt = build_system_prompt(
        cwd=CWD, date=DATE, prompt_files=files, system_prompt="from flag", append_system_prompt="appended by flag"
    )
    assert prompt.startswith("from flag\n\nappended by file\n\nappended by flag\n\n")
    assert "from file" not in prompt


def test_append_goes_after_the_default_body() -> None:
    prompt = build_system_prompt(cwd=CWD, date=DATE, append_system_prompt="Always answer in French.")
    assert prompt.index("Guidelines:") < prompt.index("Always answer in French.") < prompt.index("Current date")


def test_blank_overrides_are_ignored() -> None:
    prompt = build_system_prompt(cwd=CWD, date=DATE, system_prompt="  ", prompt_files=PromptFiles(system="\n"))
    assert prompt.startswith("You are heron")


def test_load_prompt_files_project_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, cwd = tmp_path / "home", tmp_path / "project"
    (cwd / ".heron").mkdir(parents=True)
    home.mkdir()
    monkeypatch.setenv("HERON_HOME", str(home))
    (home / "SYSTEM.md").write_text("home system")
    (home / "APPEND_SYSTEM.md").write_text("home append")
    (cwd / ".heron" / "APPEND_SYSTEM.md").write_text("project append")
    files = load_prompt_files(cwd)
    assert (files.system, files.system_path) == ("home system", home / "SYSTEM.md")
    assert (files.append, files.append_path) == ("project append", cwd / ".heron" / "APPEND_SYSTEM.md")
    assert load_prompt_files(tmp_path / "elsewhere", home=tmp_path / "none") == PromptFiles()


def test_resolve_prompt_text(tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("from a file")
    assert resolve_prompt_text("prompt.txt", tmp_path) == "from a file"
    assert resolve_prompt_text(str(tmp_path / "prompt.txt"), Path("/")) == "from a file"
    assert resolve_prompt_text("Be brief.", tmp_path) == "Be brief."
    assert resolve_prompt_text("x" * 5000, tmp_path) == "x" * 5000  # too long for a path: still text
    assert resolve_prompt_text("line one\nline two", tmp_path) == "line one\nline two"
    assert resolve_prompt_text(str(tmp_path), tmp_path) == str(tmp_path)  # a directory is not a prompt


# --- fixed overhead per request -------------------------------------------------------

# pi 1.6 sends 5,154 characters of system prompt and tool definitions with every request;
# heron sent 6,187 for the same guidance, mostly because each tool's full description was
# repeated in the prompt. The default set must stay at most pi's.
PI_OVERHEAD_CHARS = 5_154


def test_the_default_tool_set_costs_at_most_pis_fixed_overhead(tmp_path: Path) -> None:
    # pi's default set, for the same guidance (heron's default adds search_history, the way
    # back to what compaction summarised: its cost is measured in bench/tool_overhead.py)
    tools = create_tools(ToolEnv(cwd=Path("/home/user/project"), home=tmp_path), ["read", "bash", "edit", "write"])
    # what the runtime passes: each tool with its full description
    prompt = build_system_prompt(cwd="/home/user/project", date=DATE, tools=[(t.name, t.description) for t in tools])
    chars = request_overhead_chars(prompt, [t.definition() for t in tools])
    assert chars <= PI_OVERHEAD_CHARS, chars
    # the full descriptions are sent once, with the definitions, not repeated in the prompt
    for tool in tools:
        assert tool.description not in prompt
        assert f"- {tool.name}: {TOOL_SUMMARIES[tool.name]}" in prompt
    # and the guidance the tools need is still there, in one place or the other
    everything = prompt + " ".join(t.description for t in tools)
    for needed in (
        "offset/limit",  # paging through long files
        "old_text must match",  # edit's exact-match rule
        "full output is saved to a file",  # where bash's cut output went
        "stdin is empty",  # bash never waits for input
        "Read a file before editing it",
        "use write only for new files",
        "no prompts (pass -y or similar)",
    ):
        assert needed in everything, needed


def test_an_extension_tool_is_summarised_by_its_first_sentence() -> None:
    long = "Deploy the build to staging. Needs credentials in the environment; takes a minute."
    prompt = build_system_prompt(cwd=CWD, date=DATE, tools=[("deploy", long)])
    assert "- deploy: Deploy the build to staging.\n" in prompt
    assert "credentials" not in prompt
    assert first_sentence("x" * 300).endswith("…") and len(first_sentence("x" * 300)) == 160
