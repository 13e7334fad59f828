"""Classifying a submitted line, and Tab completion of slash commands."""

from __future__ import annotations

import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from heron.cli.tui.commands import COMMANDS, Command, Prompt, Shell, SlashCompleter, help_lines, parse_input


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("/model", Command("model")),
        ("/model   openai/gpt-4o  ", Command("model", "openai/gpt-4o")),
        ("/MODEL x", Command("model", "x")),
        ("/compact focus on the failing tests", Command("compact", "focus on the failing tests")),
        ("/tree 12 --summary", Command("tree", "12 --summary")),
        ("/exit", Command("quit")),
        ("/q", Command("quit")),
        ("/compact\nkeep the API notes", Command("compact", "keep the API notes")),
        ("!ls -la", Shell("ls -la", keep=True)),
        ("  !  git status", Shell("git status", keep=True)),
        ("!!pytest -q", Shell("pytest -q", keep=False)),
        ("!", Shell("", keep=True)),
        ("fix the bug", Prompt("fix the bug")),
        ("line one\nline two", Prompt("line one\nline two")),
        ("/skill:pdf merge a.pdf b.pdf", Prompt("/skill:pdf merge a.pdf b.pdf", slash="skill:pdf")),
        ("/review src/app.py", Prompt("/review src/app.py", slash="review")),
        ("/usr/bin/python is slow", Prompt("/usr/bin/python is slow")),
        ("/ alone", Prompt("/ alone")),
    ],
)
def test_parse_input(line: str, expected: object) -> None:
    assert parse_input(line) == expected


def test_every_command_is_in_the_help() -> None:
    text = "\n".join(help_lines())
    for spec in COMMANDS.values():
        assert spec.usage in text
    assert "Alt+Enter" in text and "!!command" in text


def completions(completer: SlashCompleter, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))]


def test_completes_command_names_skills_and_templates() -> None:
    completer = SlashCompleter(lambda: [("skill:pdf", "PDF tools"), ("review", "review a file")])
    assert completions(completer, "/mo") == ["/model", "/mode"]
    assert completions(completer, "/t") == ["/thinking", "/tree"]
    assert "/skill:pdf" in completions(completer, "/sk")
    assert completions(completer, "/rev") == ["/review"]
    assert len(completions(completer, "/")) == len(COMMANDS) + 2
    assert completions(completer, "hello /mo") == []
    assert completions(completer, "/model\nx") == []


def test_completes_arguments() -> None:
    def arguments(name: str) -> list[str]:
        return {"model": ["openai/gpt-4o", "anthropic/claude"], "thinking": ["off", "high"]}.get(name, [])

    completer = SlashCompleter(arguments=arguments)
    assert completions(completer, "/model an") == ["anthropic/claude"]
    assert completions(completer, "/thinking ") == ["off", "high"]
    assert completions(completer, "/name x") == []
    assert completions(completer, "/model a b") == []
