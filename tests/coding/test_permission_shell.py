"""The command splitter behind Bash rules: every program a line can run is found."""

from __future__ import annotations

import pytest

from heron.coding.permissions.shell import ShellParseError, split_commands


def texts(line: str) -> list[str]:
    return [c.text for c in split_commands(line)]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("echo ok && rm -rf build", ["echo ok", "rm -rf build"]),
        ("a; b || c | d |& e & f", ["a", "b", "c", "d", "e", "f"]),
        ("a\nb", ["a", "b"]),
        ("(cd x && rm y)", ["cd x", "rm y"]),
        ("{ rm a; }", ["rm a"]),
        ("r''m -f x", ["rm -f x"]),
        ('"rm" -f x', ["rm -f x"]),
        ("\\rm -f x", ["rm -f x"]),
        ("FOO=1 BAR=$(id) rm x", ["id", "rm x"]),
        ("echo 'a && rm b'", ["echo a && rm b"]),
        ('echo "$(rm -rf /)"', ["rm -rf /", "echo $(rm -rf /)"]),
        ("echo `rm x`", ["rm x", "echo `rm x`"]),
        ("diff <(rm a) >(rm b)", ["rm a", "rm b", "diff <(rm a) >(rm b)"]),
        ("bash -c 'echo hi; rm x'", ["bash -c echo hi; rm x", "echo hi", "rm x"]),
        ('sh -ec "rm x"', ["sh -ec rm x", "rm x"]),
        ("eval 'rm x'", ["eval rm x", "rm x"]),
        ("if true; then rm x; fi", ["true", "rm x"]),
        ("while false; do rm x; done", ["false", "rm x"]),
        ("for f in $(ls); do rm $f; done", ["ls", "rm $f"]),
        ("cat <<'EOF'\n$(rm x)\nEOF\nls", ["cat", "ls"]),
        ("ls # && rm x", ["ls"]),
        ("echo a > out 2>&1", ["echo a"]),
        ("echo $((1 + 2))", ["echo $((1 + 2))"]),
        ("echo $", ["echo $"]),
    ],
)
def test_splits(line: str, expected: list[str]) -> None:
    assert texts(line) == expected


def test_dynamic_program_names_and_writes_are_marked() -> None:
    cmd = split_commands("$CMD -rf x")[0]
    assert cmd.dynamic_name
    assert split_commands("echo hi > file.txt")[0].writes_files
    assert not split_commands("echo hi > /dev/null 2>&1")[0].writes_files
    assert split_commands("> truncated")[0].writes_files


@pytest.mark.parametrize(
    "line",
    [
        "echo 'unterminated",
        'echo "unterminated',
        "echo $(unclosed",
        "echo `unclosed",
        "case $x in a) rm x;; esac",
        "cat <<EOF\n$(rm x)\nEOF",
        "cat <<EOF\nnever ends",
        "echo >",
        'bash -c "$SCRIPT"',
        "echo $(( $(rm x) ))",
        "echo ${x:-$(rm y)}",
        "$(" * 20 + ")" * 20,
    ],
)
def test_what_cannot_be_followed_raises(line: str) -> None:
    with pytest.raises(ShellParseError):
        split_commands(line)
