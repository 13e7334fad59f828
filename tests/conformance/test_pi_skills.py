"""pi's skill-loader fixtures: heron must load the same skills and report the same problems.

The expectations follow pi's own tests for these fixtures (which skills load, and which
warning each case produces), with one intended difference: heron folds a multi-line
description to one line, where pi keeps the newlines.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from heron.coding.skills import load_skills_from_dir, merge_skill_sets
from tests.support.fixtures import FIXTURES, needs_shared

SKILLS = FIXTURES / "pi" / "skills"
COLLISION = FIXTURES / "pi" / "skills-collision"
pytestmark = needs_shared(SKILLS, COLLISION)

LONG_NAME = "this-is-a-very-long-skill-name-that-exceeds-the-sixty-four-character-limit-set-by-the-standard"


@dataclass(frozen=True)
class Case:
    names: list[str]  # skills loaded, in order
    warnings: list[str]  # one substring per expected diagnostic, exactly that many diagnostics


CASES: dict[str, Case] = {
    "valid-skill": Case(["valid-skill"], []),
    "name-mismatch": Case(["different-name"], ["does not match parent directory"]),
    "invalid-name-chars": Case(["Invalid_Name"], ["does not match parent directory", "invalid characters"]),
    "long-name": Case([LONG_NAME], ["does not match parent directory", "exceeds 64 characters"]),
    "consecutive-hyphens": Case(["bad--name"], ["does not match parent directory", "consecutive hyphens"]),
    "missing-description": Case([], ["description is required"]),
    "no-frontmatter": Case([], ["description is required"]),
    "invalid-yaml": Case([], ["at line"]),
    "unknown-field": Case(
        ["unknown-field"], ['unknown frontmatter field "author"', 'unknown frontmatter field "version"']
    ),
    "nested": Case(["child-skill"], []),
    "root-skill-preferred": Case(["root-skill-preferred"], []),
    "multiline-description": Case(["multiline-description"], []),
    "disable-model-invocation": Case(["disable-model-invocation"], []),
}


def test_every_fixture_case_has_an_expectation() -> None:
    on_disk = sorted(p.name for p in SKILLS.iterdir() if p.is_dir())
    assert on_disk == sorted(CASES)


@pytest.mark.parametrize("case", sorted(CASES))
def test_case(case: str) -> None:
    expected = CASES[case]
    result = load_skills_from_dir(SKILLS / case, source="path")
    assert [skill.name for skill in result.skills] == expected.names
    messages = [d.message for d in result.diagnostics]
    assert len(messages) == len(expected.warnings), messages
    for fragment in expected.warnings:
        assert any(fragment in message for message in messages), (fragment, messages)
    assert all(d.kind == "warning" for d in result.diagnostics)
    assert all(d.path.name == "SKILL.md" and d.path.is_absolute() for d in result.diagnostics)


def test_descriptions_and_flags() -> None:
    result = load_skills_from_dir(SKILLS)
    by_name = {skill.name: skill for skill in result.skills}
    assert by_name["valid-skill"].description == "A valid skill for testing purposes."
    assert by_name["root-skill-preferred"].description == "Root skill should win."
    assert by_name["multiline-description"].description == (
        "This is a multiline description. It spans multiple lines. And should be normalized."
    )
    assert by_name["disable-model-invocation"].disable_model_invocation is True
    assert by_name["valid-skill"].disable_model_invocation is False
    skill = by_name["child-skill"]
    assert skill.base_dir == (SKILLS / "nested" / "child-skill").resolve()
    assert skill.file_path == skill.base_dir / "SKILL.md"


def test_whole_fixture_directory() -> None:
    result = load_skills_from_dir(SKILLS)
    expected = [name for case in sorted(CASES) for name in CASES[case].names]
    assert sorted(skill.name for skill in result.skills) == sorted(expected)
    assert len(result.diagnostics) == sum(len(case.warnings) for case in CASES.values())
    # The root skill wins over the SKILL.md below it: that one is never loaded.
    assert not any("nested-child" in str(d.path) for d in result.diagnostics)
    assert not any("nested-child" in str(skill.file_path) for skill in result.skills)


def test_collision_keeps_the_first_and_names_both_files() -> None:
    first = load_skills_from_dir(COLLISION / "first", source="user")
    second = load_skills_from_dir(COLLISION / "second", source="project")
    merged = merge_skill_sets([first, second])
    assert [(s.name, s.source, s.description) for s in merged.skills] == [("calendar", "user", "First calendar skill.")]
    assert len(merged.diagnostics) == 1
    collision = merged.diagnostics[0]
    assert collision.kind == "collision"
    assert "name collision" in collision.message
    winner = Path(COLLISION / "first" / "calendar" / "SKILL.md").resolve()
    loser = Path(COLLISION / "second" / "calendar" / "SKILL.md").resolve()
    assert collision.path == loser and collision.other_path == winner
    assert str(winner) in collision.message
