from __future__ import annotations

import os
from pathlib import Path

import pytest

from heron.coding.skills import (
    SkillNotFoundError,
    expand_skill_command,
    find_git_root,
    load_skill_file,
    load_skills,
    load_skills_from_dir,
    normalise_description,
    parse_skill_command,
    skill_locations,
    validate_name,
)


def write_skill(
    directory: Path, name: str | None = None, description: str | None = "Does things.", **extra: str
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["---"]
    if name is not None:
        lines.append(f"name: {name}")
    if description is not None:
        lines.append(f"description: {description}")
    lines += [f"{key}: {value}" for key, value in extra.items()]
    lines += ["---", "", f"# {name or directory.name}", "", "Step one: run scripts/go.sh"]
    path = directory / "SKILL.md"
    path.write_text("\n".join(lines) + "\n")
    return path


# --- validation ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "fragments"),
    [
        ("good-name-2", []),
        ("-lead", ["start or end with a hyphen"]),
        ("trail-", ["start or end with a hyphen"]),
        ("a--b", ["consecutive hyphens"]),
        ("Upper", ["invalid characters"]),
        ("under_score", ["invalid characters"]),
        ("x" * 65, ["exceeds 64 characters (65)"]),
    ],
)
def test_name_rules(name: str, fragments: list[str]) -> None:
    problems = validate_name(name, name)
    assert len(problems) == len(fragments)
    for fragment in fragments:
        assert any(fragment in p for p in problems)


def test_name_of_64_chars_is_fine() -> None:
    assert validate_name("x" * 64, "x" * 64) == []


def test_missing_name_uses_the_directory_name(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(write_skill(tmp_path / "deploy"))
    assert skill is not None and skill.name == "deploy"
    assert diagnostics == []


def test_long_description_warns_but_loads(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(write_skill(tmp_path / "big", description="word " * 300))
    assert skill is not None
    assert [d.message for d in diagnostics] == ["description exceeds 1024 characters (1499)"]


def test_description_of_wrong_type_skips(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(write_skill(tmp_path / "num", description="42"))
    assert skill is None
    assert "description must be a string" in diagnostics[0].message


def test_blank_description_skips(tmp_path: Path) -> None:
    skill, diagnostics = load_skill_file(write_skill(tmp_path / "blank", description="'   '"))
    assert skill is None
    assert "description is required" in diagnostics[0].message


def test_non_boolean_disable_flag_warns_and_is_false(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "flag", **{"disable-model-invocation": "'yes'"})
    skill, diagnostics = load_skill_file(path)
    assert skill is not None and skill.disable_model_invocation is False
    assert "disable-model-invocation must be true or false" in diagnostics[0].message


def test_known_optional_fields_do_not_warn(tmp_path: Path) -> None:
    path = write_skill(tmp_path / "full", license="MIT", compatibility="any", **{"allowed-tools": "read bash"})
    assert load_skill_file(path)[1] == []


def test_front_matter_that_is_not_a_mapping_is_skipped(tmp_path: Path) -> None:
    directory = tmp_path / "listy"
    directory.mkdir()
    (directory / "SKILL.md").write_text("---\n- a\n- b\n---\nbody\n")
    skill, diagnostics = load_skill_file(directory / "SKILL.md")
    assert skill is None and "mapping" in diagnostics[0].message


def test_crlf_and_bom_are_tolerated(tmp_path: Path) -> None:
    directory = tmp_path / "win"
    directory.mkdir()
    (directory / "SKILL.md").write_bytes(
        b"\xef\xbb\xbf---\r\nname: win\r\ndescription: Windows file.\r\n---\r\nBody\r\n"
    )
    skill, diagnostics = load_skill_file(directory / "SKILL.md")
    assert skill is not None and skill.description == "Windows file." and diagnostics == []


def test_unreadable_file_is_a_diagnostic(tmp_path: Path) -> None:
    directory = tmp_path / "bin"
    directory.mkdir()
    (directory / "SKILL.md").write_bytes(b"---\nname: bin\ndescription: \xff\xfe\n---\n")
    skill, diagnostics = load_skill_file(directory / "SKILL.md")
    assert skill is None and "cannot read" in diagnostics[0].message


def test_normalise_description() -> None:
    assert normalise_description("  one\n  two\n\nthree  ") == "one two three"


# --- discovery ----------------------------------------------------------------


def test_hidden_and_node_modules_directories_are_skipped(tmp_path: Path) -> None:
    write_skill(tmp_path / ".hidden" / "secret")
    write_skill(tmp_path / "node_modules" / "dep")
    write_skill(tmp_path / "group" / "real")
    assert [s.name for s in load_skills_from_dir(tmp_path).skills] == ["real"]


def test_missing_directory_is_empty(tmp_path: Path) -> None:
    result = load_skills_from_dir(tmp_path / "nope")
    assert result.skills == [] and result.diagnostics == []


def test_symlink_loop_terminates(tmp_path: Path) -> None:
    write_skill(tmp_path / "a" / "one")
    os.symlink(tmp_path / "a", tmp_path / "a" / "loop")
    assert [s.name for s in load_skills_from_dir(tmp_path).skills] == ["one"]


def test_locations_stop_at_the_git_root(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    cwd = repo / "pkg" / "sub"
    cwd.mkdir(parents=True)
    (repo / ".git").mkdir()
    locations = skill_locations(cwd)
    assert locations == [
        (home / "skills", "user"),
        (cwd / ".heron" / "skills", "project"),
        (cwd / ".agents" / "skills", "agents"),
        (repo / "pkg" / ".agents" / "skills", "agents"),
        (repo / ".agents" / "skills", "agents"),
    ]
    assert find_git_root(cwd) == repo


def test_without_git_root_only_the_cwd(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "plain" / "dir"
    cwd.mkdir(parents=True)
    if find_git_root(cwd) is not None:
        pytest.skip("the temp directory is inside a git repository")
    agents = [path for path, source in skill_locations(cwd) if source == "agents"]
    assert agents == [cwd / ".agents" / "skills"]


def test_git_worktree_file_counts_as_root(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("gitdir: /elsewhere\n")
    (tmp_path / "x").mkdir()
    assert find_git_root(tmp_path / "x") == tmp_path


def test_load_skills_precedence_and_collisions(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    cwd = repo / "app"
    (repo / ".git").mkdir(parents=True)
    cwd.mkdir()
    write_skill(home / "skills" / "review", description="User review.")
    write_skill(cwd / ".heron" / "skills" / "review", description="Project review.")
    write_skill(cwd / ".heron" / "skills" / "deploy", description="Project deploy.")
    write_skill(repo / ".agents" / "skills" / "deploy", description="Repo deploy.")
    write_skill(repo / ".agents" / "skills" / "lint", description="Repo lint.")
    write_skill(tmp_path / ".agents" / "skills" / "outside", description="Above the git root.")

    result = load_skills(cwd)
    assert [(s.name, s.source, s.description) for s in result.skills] == [
        ("review", "user", "User review."),
        ("deploy", "project", "Project deploy."),
        ("lint", "agents", "Repo lint."),
    ]
    collisions = [d for d in result.diagnostics if d.kind == "collision"]
    assert [(d.path, d.other_path) for d in collisions] == [
        (cwd / ".heron" / "skills" / "review" / "SKILL.md", home / "skills" / "review" / "SKILL.md"),
        (repo / ".agents" / "skills" / "deploy" / "SKILL.md", cwd / ".heron" / "skills" / "deploy" / "SKILL.md"),
    ]
    assert result.get("lint") is not None and result.get("outside") is None


def test_same_file_twice_is_not_a_collision(tmp_path: Path, home: Path) -> None:
    write_skill(home / "skills" / "shared")
    cwd = tmp_path / "work"
    (cwd / ".heron").mkdir(parents=True)
    os.symlink(home / "skills", cwd / ".heron" / "skills")
    result = load_skills(cwd)
    assert [s.name for s in result.skills] == ["shared"]
    assert result.diagnostics == []


def test_model_invocable_filters_disabled(tmp_path: Path, home: Path) -> None:
    write_skill(home / "skills" / "auto")
    write_skill(home / "skills" / "manual", **{"disable-model-invocation": "true"})
    result = load_skills(tmp_path)
    assert [s.name for s in result.model_invocable()] == ["auto"]
    assert result.get("manual") is not None


# --- /skill:name ----------------------------------------------------------------


def test_parse_skill_command() -> None:
    assert parse_skill_command("/skill:deploy") == ("deploy", "")
    assert parse_skill_command("  /skill:deploy to staging  ") == ("deploy", "to staging")
    assert parse_skill_command("/skill:deploy\nline one\nline two") == ("deploy", "line one\nline two")
    assert parse_skill_command("/skill:") is None
    assert parse_skill_command("/deploy") is None
    assert parse_skill_command("please /skill:deploy") is None


def test_expand_skill_command(tmp_path: Path, home: Path) -> None:
    path = write_skill(home / "skills" / "deploy", description="Deploys.")
    skills = load_skills(tmp_path)
    text = expand_skill_command("/skill:deploy to staging", skills)
    assert text is not None
    assert text.startswith(f'<skill name="deploy" location="{path}">\n')
    assert f"resolve against {path.parent}." in text
    assert "Step one: run scripts/go.sh\n</skill>\n\nto staging" in text
    assert "description:" not in text  # front matter is not repeated
    assert expand_skill_command("/skill:deploy", skills) == text.rsplit("\n\n", 1)[0]
    assert expand_skill_command("hello", skills) is None


def test_expansion_reads_the_current_file(tmp_path: Path, home: Path) -> None:
    path = write_skill(home / "skills" / "deploy")
    skills = load_skills(tmp_path)
    path.write_text("---\ndescription: Deploys.\n---\nNew instructions.\n")
    text = expand_skill_command("/skill:deploy", skills)
    assert text is not None and "New instructions." in text


def test_unknown_skill_lists_the_available_ones(tmp_path: Path, home: Path) -> None:
    write_skill(home / "skills" / "deploy")
    with pytest.raises(SkillNotFoundError, match=r"unknown skill 'nope' \(available: deploy\)"):
        expand_skill_command("/skill:nope", load_skills(tmp_path))


def test_disabled_skill_is_still_user_invocable(tmp_path: Path, home: Path) -> None:
    write_skill(home / "skills" / "manual", **{"disable-model-invocation": "true"})
    assert expand_skill_command("/skill:manual", load_skills(tmp_path)) is not None
