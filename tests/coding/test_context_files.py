from __future__ import annotations

from pathlib import Path

import pytest

from heron.coding.context_files import (
    ContextFile,
    cut_middle,
    discover_context_files,
    ledger_records,
    load_context_files,
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    cwd = tmp_path / "repo" / "pkg" / "sub"
    cwd.mkdir(parents=True)
    return cwd


def mine(records: list[ContextFile], root: Path) -> list[ContextFile]:
    """Only the files under the test's temp dir (a stray /AGENTS.md must not break tests)."""
    return [r for r in records if root in r.path.parents]


def test_order_global_then_root_down_to_cwd(tmp_path: Path, home: Path, project: Path) -> None:
    (home / "AGENTS.md").write_text("global")
    (tmp_path / "repo" / "AGENTS.md").write_text("repo")
    (tmp_path / "repo" / "pkg" / "CLAUDE.md").write_text("pkg")
    (project / "AGENTS.md").write_text("sub")
    paths = [p for p in discover_context_files(project) if tmp_path in p.parents]
    assert paths == [
        home / "AGENTS.md",
        tmp_path / "repo" / "AGENTS.md",
        tmp_path / "repo" / "pkg" / "CLAUDE.md",
        project / "AGENTS.md",
    ]
    records = mine(load_context_files(project), tmp_path)
    assert [r.content for r in records] == ["global", "repo", "pkg", "sub"]
    assert [r.is_global for r in records] == [True, False, False, False]
    assert all(not r.truncated and r.kept_chars == r.original_chars for r in records)


def test_agents_md_wins_over_claude_md_in_one_directory(tmp_path: Path, home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("agents")
    (project / "CLAUDE.md").write_text("claude")
    records = mine(load_context_files(project), tmp_path)
    assert [(r.path.name, r.content) for r in records] == [("AGENTS.md", "agents")]


def test_global_claude_md_is_not_read(tmp_path: Path, home: Path, project: Path) -> None:
    (home / "CLAUDE.md").write_text("nope")
    assert mine(load_context_files(project), tmp_path) == []


def test_empty_files_are_skipped(tmp_path: Path, home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("\n  \n")
    assert mine(load_context_files(project), tmp_path) == []


def test_home_inside_the_tree_is_listed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    monkeypatch.setenv("HERON_HOME", str(project))
    (project / "AGENTS.md").write_text("both")
    records = mine(load_context_files(project), tmp_path)
    assert [r.content for r in records] == ["both"]


def test_cut_middle_keeps_head_and_tail_with_a_marker() -> None:
    text = "".join(f"line {i:04d}\n" for i in range(2000))  # 20,000 chars
    cut, kept = cut_middle(text, 1000, "/p/AGENTS.md")
    head, _, tail = cut.partition("[...")
    assert head.startswith("line 0000\n") and head.endswith("\n")
    assert tail.endswith("line 1999\n")
    # Whole lines only, roughly 75% / 25% of the budget.
    assert 650 <= len(head) <= 750 and 180 <= len(tail.split("\n", 1)[1]) <= 250
    assert kept <= 1000 and kept == len(head) + len(tail.split("\n", 1)[1])
    assert f"{len(text) - kept} characters cut from the middle of /p/AGENTS.md" in cut


def test_cut_middle_without_newlines() -> None:
    cut, kept = cut_middle("x" * 5000, 400, "f")
    assert kept == 400
    assert cut.startswith("x" * 300 + "\n[... 4600 characters cut")
    assert cut.endswith("]\n" + "x" * 100)


def test_short_text_is_untouched() -> None:
    assert cut_middle("short", 10, "f") == ("short", 5)


def test_per_file_budget(tmp_path: Path, home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("a" * 20_000)
    (record,) = mine(load_context_files(project), tmp_path)
    assert record.truncated and record.original_chars == 20_000
    assert record.kept_chars == 12_000 and record.cut_chars == 8_000
    assert str(project / "AGENTS.md") in record.content


def test_per_file_budget_is_configurable(tmp_path: Path, home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("a" * 3_000)
    (record,) = mine(load_context_files(project, per_file_chars=1_000), tmp_path)
    assert record.kept_chars == 1_000


def test_total_budget_keeps_the_closest_files_whole(tmp_path: Path, home: Path, project: Path) -> None:
    (home / "AGENTS.md").write_text("g" * 5_000)
    (tmp_path / "repo" / "AGENTS.md").write_text("r" * 5_000)
    (tmp_path / "repo" / "pkg" / "AGENTS.md").write_text("p" * 5_000)
    (project / "AGENTS.md").write_text("s" * 5_000)
    records = mine(load_context_files(project, total_chars=12_000), tmp_path)
    by_name = {r.path.parent.name: r for r in records}
    assert not by_name["sub"].truncated and by_name["sub"].kept_chars == 5_000
    assert not by_name["pkg"].truncated and by_name["pkg"].kept_chars == 5_000
    assert by_name["repo"].truncated and by_name["repo"].kept_chars == 2_000
    glob = by_name["home"]
    assert glob.is_global and glob.truncated and glob.kept_chars == 0
    assert "left out" in glob.content and str(home / "AGENTS.md") in glob.content
    assert sum(r.kept_chars for r in records) == 12_000
    # The prompt order is unchanged: global first, cwd last.
    assert [r.path.parent.name for r in records] == ["home", "repo", "pkg", "sub"]


def test_default_total_budget_is_60000(tmp_path: Path, home: Path, project: Path) -> None:
    (home / "AGENTS.md").write_text("g" * 30_000)
    cwd = project / "deeper"
    cwd.mkdir()
    for directory in [tmp_path, tmp_path / "repo", tmp_path / "repo" / "pkg", project, cwd]:
        (directory / "AGENTS.md").write_text("x" * 30_000)
    records = mine(load_context_files(cwd), tmp_path)
    assert [r.kept_chars for r in records] == [0, 12_000, 12_000, 12_000, 12_000, 12_000]
    assert sum(r.kept_chars for r in records) == 60_000


def test_deterministic(tmp_path: Path, home: Path, project: Path) -> None:
    (project / "AGENTS.md").write_text("rule\n" * 5000)
    assert load_context_files(project) == load_context_files(project)


def test_ledger_records_for_cut_files_only(tmp_path: Path, home: Path, project: Path) -> None:
    (home / "AGENTS.md").write_text("g" * 1_000)
    (tmp_path / "repo" / "AGENTS.md").write_text("small")
    (project / "AGENTS.md").write_text("s" * 13_000)
    records = mine(load_context_files(project, total_chars=12_500), tmp_path)
    ledger = ledger_records(records)
    assert [(r.kind, r.ref, r.chars_before, r.chars_after) for r in ledger] == [
        ("context_file", str(home / "AGENTS.md"), 1_000, 495),
        ("context_file", str(project / "AGENTS.md"), 13_000, 12_000),
    ]
    assert ledger[1].recover == f"read {project / 'AGENTS.md'}"
    assert ledger[1].detail == {"path": str(project / "AGENTS.md"), "omitted": False}
