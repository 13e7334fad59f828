from __future__ import annotations

from pathlib import Path

import pytest

from heron.coding.templates import (
    PromptTemplate,
    expand_template,
    expand_template_command,
    load_templates,
    parse_template_command,
    split_args,
    substitute,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "home"
    (path / "prompts").mkdir(parents=True)
    monkeypatch.setenv("HERON_HOME", str(path))
    return path


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".heron" / "prompts").mkdir(parents=True)
    return path


def template(body: str) -> PromptTemplate:
    return PromptTemplate("t", "", body, Path("/t.md"), "user")


# --- argument splitting ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("a b  c", ["a", "b", "c"]),
        ('"two words" x', ["two words", "x"]),
        ("'single quoted' y", ["single quoted", "y"]),
        (r"C:\path\file.txt", [r"C:\path\file.txt"]),
        ("issue #12", ["issue", "#12"]),
        ('unbalanced "quote here', ["unbalanced", '"quote', "here"]),
        ("it's fine", ["it's", "fine"]),
    ],
)
def test_split_args(text: str, expected: list[str]) -> None:
    assert split_args(text) == expected


# --- placeholders ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "args", "expected"),
    [
        ("$1 and $2", ["a", "b"], "a and b"),
        ("$1 and $3", ["a"], "a and "),
        ("all: $@", ["a", "b", "c"], "all: a b c"),
        ("all: $ARGUMENTS", ["a", "b", "c"], "all: a b c"),
        ("rest: ${@:2}", ["a", "b", "c"], "rest: b c"),
        ("slice: ${@:2:1}", ["a", "b", "c"], "slice: b"),
        ("slice: ${@:2:5}", ["a", "b", "c"], "slice: b c"),
        ("beyond: ${@:9}", ["a"], "beyond: "),
        ("zero: ${@:0}", ["a", "b"], "zero: a b"),
        ("none: ${@:1:0}", ["a"], "none: "),
        ("ten: $10", [str(i) for i in range(1, 11)], "ten: 10"),
        ("cost $0 stays", ["a"], "cost $0 stays"),
        ("no re-expansion: $1", ["$2"], "no re-expansion: $2"),
        ("$1$1", ["x"], "xx"),
    ],
)
def test_substitute(body: str, args: list[str], expected: str) -> None:
    assert substitute(body, args) == expected


def test_template_without_placeholders_gets_the_arguments_appended() -> None:
    assert expand_template(template("Review the code."), "  focus on tests ") == "Review the code.\n\nfocus on tests"
    assert expand_template(template("Review the code."), "") == "Review the code."


def test_quoted_argument_is_one_positional() -> None:
    assert expand_template(template("Title: $1; body: ${@:2}"), '"Fix the bug" now please') == (
        "Title: Fix the bug; body: now please"
    )


# --- loading --------------------------------------------------------------------


def test_load_and_expand(home: Path, cwd: Path) -> None:
    (home / "prompts" / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1 carefully.\n")
    (home / "prompts" / "notes.txt").write_text("not a template")
    templates = load_templates(cwd)
    assert list(templates.templates) == ["review"]
    review = templates.get("review")
    assert review is not None
    assert (review.description, review.body, review.source) == ("Review a file", "Review $1 carefully.", "user")
    assert expand_template_command("/review src/app.py", templates) == "Review src/app.py carefully."
    assert expand_template_command("/unknown x", templates) is None
    assert expand_template_command("plain text", templates) is None


def test_description_falls_back_to_the_first_line(home: Path, cwd: Path) -> None:
    (home / "prompts" / "fix.md").write_text("\n# Fix the failing tests\n\nThen commit.\n")
    (home / "prompts" / "long.md").write_text("x" * 200)
    templates = load_templates(cwd)
    fix, long = templates.get("fix"), templates.get("long")
    assert fix is not None and fix.description == "Fix the failing tests"
    assert long is not None and len(long.description) == 80 and long.description.endswith("...")


def test_project_template_wins(home: Path, cwd: Path) -> None:
    (home / "prompts" / "pr.md").write_text("user version")
    (cwd / ".heron" / "prompts" / "pr.md").write_text("project version")
    templates = load_templates(cwd)
    pr = templates.get("pr")
    assert pr is not None and (pr.body, pr.source) == ("project version", "project")
    assert len(templates.diagnostics) == 1
    assert str(home / "prompts" / "pr.md") in templates.diagnostics[0]
    assert str(cwd / ".heron" / "prompts" / "pr.md") in templates.diagnostics[0]


def test_bad_front_matter_is_reported_and_skipped(home: Path, cwd: Path) -> None:
    (home / "prompts" / "bad.md").write_text("---\ndescription: [oops\n---\nbody\n")
    templates = load_templates(cwd)
    assert templates.get("bad") is None
    assert "invalid YAML front matter at line" in templates.diagnostics[0]


def test_name_with_spaces_is_skipped(home: Path, cwd: Path) -> None:
    (home / "prompts" / "two words.md").write_text("x")
    templates = load_templates(cwd)
    assert templates.templates == {} and "cannot contain spaces" in templates.diagnostics[0]


def test_missing_directories_are_fine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERON_HOME", str(tmp_path / "nohome"))
    assert load_templates(tmp_path / "nowhere").templates == {}


def test_parse_template_command() -> None:
    assert parse_template_command("/review a b") == ("review", "a b")
    assert parse_template_command("  /review") == ("review", "")
    assert parse_template_command("/") is None
    assert parse_template_command("review") is None


def test_sorted(home: Path, cwd: Path) -> None:
    for name in ("b", "a", "c"):
        (home / "prompts" / f"{name}.md").write_text(name)
    assert [t.name for t in load_templates(cwd).sorted()] == ["a", "b", "c"]
