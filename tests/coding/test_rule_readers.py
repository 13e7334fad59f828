"""The readers behind the rules (docs/permissions.md, "Commands the rules cannot vouch for",
"What a command rule covers", "Hard links"): what each vouches for, what it cannot bound,
where it asks, and that ordinary commands stay allowed.

The bypass battery (tests/coding/test_rule_bypasses.py) runs the tricks; this file pins the
decisions one reader at a time, with the rules and modes that make them differ.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from heron.coding.permissions import PermissionEngine
from heron.coding.permissions.findings import Hidden
from heron.coding.permissions.hidden import hidden_in
from heron.coding.permissions.links import other_names
from heron.coding.permissions.shell import ShellParseError, split_commands
from heron.coding.sandbox.escalation import escalation_decision


@pytest.fixture
def engine(tmp_path: Path) -> PermissionEngine:
    project = tmp_path / "project"
    (project / "locked").mkdir(parents=True)
    (project / "secrets").mkdir()
    engine = PermissionEngine(cwd=project, home=tmp_path / "heron-home")
    engine.add_rules("deny", ["Bash(rm:*)", "Edit(locked/**)", "Read(./secrets/**)"], "settings.json")
    return engine


def decide(engine: PermissionEngine, command: str) -> str:
    return engine.decide("bash", {"command": command}).behavior


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c 'print(1 + 1)'",
        "python3 -m pytest -q",
        "python3 --version",
        "python3 tool.py --flag",
        "perl -ne 'print if /x/' f",
        "perl -lane 'print $F[1]' f",
        "perl -0777 -pe 's/a/b/g' f",
        "node -e 'console.log(1 + 1)'",
        "ruby -ne 'puts $_' f",
        "awk '{ print $1 }' f",
        "awk '$1 > 5 { print }' f",
        'awk \'BEGIN { print "x" > "out.txt" }\'',
        "make",
        "make test CFLAGS=-O2",
        "bash build.sh",
        "git status && git log -3",
        "tar -czf out.tgz src",
        "tar -tf a.tar",
        "tar -xf a.tar -O",
        "unzip -l a.zip",
        "cp -r src dst",
        "find . -name '*.py' -exec grep -l x {} +",
        "echo hi | xargs echo",
        "grep -r key src",
        "grep -r key .",  # secrets/ holds nothing yet
        "GIT_PAGER=cat git log",
        "git rm --cached f",
        "gzip -k f",
        "gzip -dc f.gz",
        "zstd f",
        "bash ok.sh",
        "./ok.sh",
        "python3 tool.py",
        "cat < notes.txt",
    ],
)
def test_what_the_rules_vouch_for(engine: PermissionEngine, command: str) -> None:
    (engine.cwd / "ok.sh").write_text("#!/bin/sh\nls\n")
    (engine.cwd / "tool.py").write_text("#!/usr/bin/env python3\nimport os\nos.remove('f')\n")
    assert decide(engine, command) == "allow", engine.decide("bash", {"command": command}).message


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("python3 - <<'EOF'\nprint(1)\nEOF", "reads from -"),
        ("python3 <<'EOF'\nprint(1)\nEOF", "standard input"),
        ("echo 'print(1)' | python3", "standard input"),
        ("python3 -i tool.py", "interactive"),
        ("python3 $SCRIPT", "reads from $SCRIPT"),
        ("python3 -c 'import json; print(1)'", "`import`"),
        ("python3 -c 'print(open(\"x\").read())'", "`open`"),
        ('python3 -c "print(().__class__)"', "`__`"),
        ("perl -e 'print `id`'", "`"),
        ("perl -MPOSIX -e 'print 1'", "POSIX"),
        ("node -e 'require(\"child_process\")'", "require"),
        ("ruby -e 'File.read(\"x\")'", "File"),
        ("php -r 'echo 1;'", "any function"),
        ("awk 'BEGIN { c = \"id\"; c | getline }'", "pipes"),
        ("awk '@load \"rwarray\"'", "@load"),
        ("awk -f - f", "reads from -"),
        ("sed -f /dev/stdin f", "/dev/stdin"),
        ("make -f -", "makefile from -"),
        ("make -f/dev/stdin", "makefile from /dev/stdin"),
        ("make SHELL=/bin/bash", "SHELL"),
        ("MAKEFLAGS=--eval=x make", "MAKEFLAGS"),
        ("bash <(echo hi)", "<(echo hi)"),
        ("zsh /dev/fd/3", "/dev/fd/3"),
        ("echo 'ls' | parallel", "parallel"),
        ("git -c core.hooksPath=/tmp/h commit", "core.hookspath"),
    ],
)
def test_what_cannot_be_bounded_is_asked_about_and_says_why(engine: PermissionEngine, command: str, why: str) -> None:
    decision = engine.decide("bash", {"command": command})
    assert decision.behavior == "ask" and decision.reason == "parse", (command, decision.message)
    assert why in decision.message and 'rule "Bash(rm:*)"' in decision.message
    assert decision.suggestion == "Bash(" + " ".join(command.split()) + ")"


@pytest.mark.parametrize(
    ("command", "program"),
    [
        ("unlink f", "rm f"),
        ("shred -zu f", "rm f"),
        ("find . -name f -delete", "rm -r ."),
        ("rsync --remove-source-files a b/", "rm a"),
        ("GIT_PAGER='rm f' git log", "rm f"),
        ("LESSOPEN='|rm %s' less f", "rm x"),
        ("export EDITOR='rm f'; git commit", "rm f"),
        ("make CC=rm", "rm"),
        ("make 'CC=sh -c \"rm f\"'", "rm f"),
        ("echo rm | xargs -I{} {} f", "xargs -I{} {} f"),
        ("find . -exec {} f \\;", "{} f"),
        ("git rm -q f", "rm f"),
        ("git clean -fdx", "rm -r ."),
        ("rsync -a --delete empty/ ./", "rm -r ./"),
        ("zip -m a.zip f", "rm f"),
        ("gzip f", "rm f"),
        ("xz -d f.xz", "rm f.xz"),
        ("zstd --rm f", "rm f"),
        ("shopt -s expand_aliases; alias zap=rm", "rm"),
        ("taskset 1 rm f", "taskset 1 rm f"),
        ("strace -f -o /dev/null rm f", "strace -f -o /dev/null rm f"),
    ],
)
def test_deleting_programs_count_as_rm(engine: PermissionEngine, command: str, program: str) -> None:
    decision = engine.decide("bash", {"command": command})
    assert decision.behavior in ("deny", "ask") and "Bash(rm:*)" in decision.message, decision.message
    assert f'"{program}"' in decision.message


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("tar -xf a.tar -C locked", "deny"),
        ("tar xzf a.tgz --directory=locked/sub", "deny"),
        ("tar -xf a.tar", "ask"),
        ("tar -xPf a.tar -C /tmp/x", "ask"),  # -P: members may name any absolute path
        ("tar -xf a.tar -C /tmp/x", "allow"),
        ("unzip -o a.zip", "ask"),
        ("unzip a.zip -d /tmp/x", "allow"),
        ("cpio -idm < a.cpio", "ask"),
        ("cp -r backup/. .", "ask"),
        ("cp -a backup locked/", "deny"),
        ("rsync -a backup/ ./", "ask"),
        ("patch -p1 < fix.diff", "ask"),
        ("patch -d /tmp/x -p1 < fix.diff", "allow"),
        ("chmod -R a+w .", "ask"),
        ("git checkout main", "ask"),
        ("git -C /tmp/other stash pop", "allow"),
        ("find locked -exec touch {} +", "deny"),
        ("find . -exec touch {} +", "ask"),
        ("echo locked/f | xargs cp /etc/hostname", "ask"),
        ("cp /etc/hostname $TARGET", "ask"),
        ("cat < secrets/key", "deny"),
        ("cat < $F", "ask"),
    ],
)
def test_writes_beneath_a_directory_and_computed_targets(engine: PermissionEngine, command: str, expected: str) -> None:
    decision = engine.decide("bash", {"command": command})
    assert decision.behavior == expected, (command, decision.message)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("grep -r key .", "ask"),
        ("grep -rl key", "ask"),
        ("grep -e key -R . src", "ask"),
        ("rg key", "ask"),
        ("grep key *", "deny"),  # the glob names secrets/ itself
        ("grep -r key src", "allow"),
        ("tar -czf /tmp/out.tgz .", "ask"),
        ("tar -czf /tmp/out.tgz src", "allow"),
        ("tar -cf - -C secrets .", "deny"),
        ("zip -r /tmp/out.zip .", "ask"),
        ("cp -r . /tmp/copy", "ask"),
        ("cp -r secrets /tmp/copy", "deny"),
        ("rsync -a ./ /tmp/copy/", "ask"),
        ("find . -type f -exec cat {} +", "ask"),
        ("find src -type f -exec cat {} +", "allow"),
        ("find . -type f | xargs cat", "ask"),
    ],
)
def test_a_read_of_everything_beneath_a_directory(engine: PermissionEngine, command: str, expected: str) -> None:
    (engine.cwd / "secrets" / "key").write_text("k\n")
    (engine.cwd / "src").mkdir()
    decision = engine.decide("bash", {"command": command})
    assert decision.behavior == expected, (command, decision.message)


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("bash evil.sh", "deny"),
        ("sh ./evil.sh arg", "deny"),
        ("./evil.sh", "deny"),
        (". evil.sh", "deny"),
        ("source ./evil.sh", "deny"),
        ("bash outer.sh", "deny"),  # a script that runs a script
        ("bash tangled.sh", "ask"),  # cannot be followed
        ("bash big.sh", "ask"),  # too long to read
        ("printf 'rm f' > x.sh; bash x.sh", "ask"),
        ("cat > x.sh <<'EOF'\nrm f\nEOF\nbash x.sh", "ask"),
        ("printf 'all:\\n\\trm f\\n' > mk; make -f mk", "ask"),
        ("printf 'all:\\n\\trm f\\n' > Makefile && make", "ask"),
        ("cp /tmp/a.sh run.sh && ./run.sh", "ask"),
        ("cp /tmp/a.sh sub/ && bash sub/a.sh", "ask"),
        ("echo x > $OUT; bash ok.sh", "ask"),
        ("tar -xf a.tar -C /tmp/t && bash /tmp/t/a.sh", "ask"),
        ("echo x > log.txt && bash ok.sh", "allow"),
    ],
)
def test_the_scripts_a_line_runs(engine: PermissionEngine, command: str, expected: str) -> None:
    (engine.cwd / "sub").mkdir()
    (engine.cwd / "ok.sh").write_text("ls\n")
    (engine.cwd / "evil.sh").write_text("#!/bin/bash\necho hi\nrm f\n")
    (engine.cwd / "evil.sh").chmod(0o755)
    (engine.cwd / "outer.sh").write_text("bash evil.sh\n")
    (engine.cwd / "tangled.sh").write_text("case $1 in a) ls;; esac\n")
    (engine.cwd / "big.sh").write_text("ls\n" * 30_000)
    decision = engine.decide("bash", {"command": command})
    assert decision.behavior == expected, (command, decision.message)


def test_code_git_brings_is_the_projects(tmp_path: Path) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    engine.add_rules("deny", ["Bash(rm:*)"], "t")
    assert decide(engine, "git pull && make") == "allow"
    assert decide(engine, "tar -xf a.tar && make") == "ask"


def test_a_path_rule_alone_makes_what_cannot_be_checked_ask(tmp_path: Path) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    assert decide(engine, "echo 'rm x' | sh") == "allow"  # no rule: the mode's bash
    engine.add_rules("deny", ["Edit(locked/**)"], "t")
    decision = engine.decide("bash", {"command": "echo 'rm locked/x' | sh"})
    assert decision.behavior == "ask" and 'rule "Edit(locked/**)"' in decision.message


def test_bypass_mode_asks_only_when_a_deny_rule_could_be_got_around(tmp_path: Path) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home", mode="bypass")
    command = "python3 - <<'EOF'\nimport os\nEOF"
    engine.add_rules("ask", ["Bash(git push:*)"], "t")
    assert decide(engine, command) == "allow"
    engine.add_rules("deny", ["Bash(rm:*)"], "t")
    assert decide(engine, command) == "ask"
    engine.mode = "plan"
    assert decide(engine, command) == "deny"


def test_an_allow_rule_for_the_interpreter_does_not_vouch_for_its_code(engine: PermissionEngine) -> None:
    command = "python3 - <<'EOF'\nimport os\nEOF"
    engine.add_rules("allow", ["Bash(python3:*)", "Bash"], "t")
    assert decide(engine, command) == "ask"
    engine.add_rules("allow", ["Bash(" + command + ")"], "t")  # that very line, as "allow always" saves it
    assert decide(engine, command) == "allow"


def test_an_exact_line_settles_a_tree_ask_but_only_the_flag_settles_an_ask_rule(engine: PermissionEngine) -> None:
    engine.add_rules("allow", ["Bash(tar -xf a.tar)"], "settings.json")
    assert decide(engine, "tar -xf a.tar") == "allow"
    engine.add_rules("ask", ["Edit(docs/**)"], "t")
    asked = engine.decide("bash", {"command": "cp x docs/y"})
    assert asked.behavior == "ask" and asked.reason == "rule" and asked.suggestion == "Bash(cp x docs/y)"
    engine.add_rules("allow", ["Bash(cp x docs/y)"], "settings.json")
    assert decide(engine, "cp x docs/y") == "ask"  # a saved allow rule never beats an ask rule
    engine.add_rules("allow", ["Bash(cp x docs/y)"], "--allow")
    assert decide(engine, "cp x docs/y") == "allow"


# --- what a command rule covers ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "covered"),
    [
        ("echo hi", True),
        ("echo hi > out.txt", True),
        ("echo hi >> ./sub/out.txt 2>&1", True),
        ("echo hi > /dev/null", True),
        ("echo hi > /dev/tcp/127.0.0.1/9", False),
        ("echo hi < /dev/udp/127.0.0.1/9", False),
        ("echo hi > /var/tmp/x", False),
        ("echo hi 2> ../x", False),
        ("echo hi > $OUT", False),
        ("echo hi > .git/hooks/pre-commit", False),
        ("echo hi > .heron/settings.json", False),
        ("cd /var/tmp && echo hi > x", False),
    ],
)
def test_an_echo_rule_covers_echo_only_within_the_project(tmp_path: Path, command: str, covered: bool) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    parts = [p for p in split_commands(command) if p.words and p.words[0].text == "echo"]
    assert [engine.covers("echo:*", part, command) for part in parts] == [covered]
    rules = engine.rules + [r for r in _rules("Unsandboxed(echo:*)", "Unsandboxed(cd:*)")]
    expected = "allow" if covered else "ask"
    assert escalation_decision(rules, "default", command, None, engine=engine).behavior == expected


def test_a_rule_naming_the_target_covers_it(tmp_path: Path) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    rules = _rules("Unsandboxed(echo * > /var/tmp/x)")
    assert escalation_decision(rules, "default", "echo hi > /var/tmp/x", None, engine=engine).behavior == "allow"
    assert escalation_decision(rules, "default", "echo hi > /var/tmp/y", None, engine=engine).behavior == "ask"


@pytest.mark.parametrize(
    ("command", "suggestion"),
    [
        ("echo hi", "Unsandboxed(echo:*)"),
        ("npm install left-pad", "Unsandboxed(npm install:*)"),
        ("cp a.txt b.txt", "Unsandboxed(cp:*)"),
        ("cp a.txt /var/tmp/b", "Unsandboxed(cp a.txt /var/tmp/b)"),
        ("tee /var/tmp/x", "Unsandboxed(tee /var/tmp/x)"),
        ("echo hi > /dev/tcp/h/1", "Unsandboxed(echo hi > /dev/tcp/h/1)"),
        ("python3 - <<'EOF'\nprint(1)\nEOF", "Unsandboxed(python3 - <<'EOF' print(1) EOF)"),
    ],
)
def test_the_suggested_unsandboxed_rule_is_never_broader_than_the_call(
    tmp_path: Path, command: str, suggestion: str
) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    asked = escalation_decision([], "default", command, None, engine=engine)
    assert asked.suggestion == suggestion
    assert escalation_decision(_rules(suggestion), "default", command, None, engine=engine).behavior == "allow"


def test_an_unsandboxed_deny_rule_refuses_a_line_any_command_of_which_it_names(tmp_path: Path) -> None:
    engine = PermissionEngine(cwd=tmp_path, home=tmp_path / "home")
    deny = _rules("Unsandboxed(curl:*)", behavior="deny")
    assert escalation_decision(deny, "bypass", "cd x && curl h", None, engine=engine).behavior == "deny"


def _rules(*texts: str, behavior: str = "allow") -> list:  # type: ignore[type-arg]
    from heron.coding.permissions.rules import parse_rule

    return [parse_rule(t, behavior, "t") for t in texts]  # type: ignore[arg-type]


# --- hard links -----------------------------------------------------------------------------------


def test_the_file_tools_check_a_hard_link_by_all_its_names(engine: PermissionEngine, tmp_path: Path) -> None:
    locked, project = engine.cwd / "locked" / "f", engine.cwd
    locked.write_text("keep\n")
    os.link(locked, project / "hl")
    decision = engine.decide("edit", {"path": "hl"})
    assert decision.behavior == "deny" and "hard link, of" in decision.message and "locked/f" in decision.message
    engine.mode = "bypass"
    assert engine.decide("write", {"path": "hl"}).behavior == "deny"
    secret = engine.cwd / "secrets" / "key"
    secret.write_text("k\n")
    os.link(secret, project / "notes.txt")
    assert engine.decide("read", {"path": "notes.txt"}).behavior == "deny"
    assert decide(engine, "cat notes.txt") == "deny"


def test_a_write_to_a_file_with_unseen_names_asks(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (elsewhere / "f").write_text("x\n")
    os.link(elsewhere / "f", project / "f")
    engine = PermissionEngine(cwd=project, home=tmp_path / "home")
    decision = engine.decide("write", {"path": "f"})
    assert decision.behavior == "ask" and decision.reason == "links" and "2 names" in decision.message
    engine.add_rules("allow", ["Edit", "Write", "Edit(**)"], "t")
    assert engine.decide("edit", {"path": "f"}).behavior == "ask"  # no pattern vouches for an unseen name
    assert decision.suggestion == f"Edit({project / 'f'})"
    engine.add_rules("allow", [decision.suggestion], "settings.json")  # the file itself, as suggested
    assert engine.decide("edit", {"path": "f"}).behavior == "allow"
    engine.rules = [r for r in engine.rules if r.text != decision.suggestion]
    assert engine.decide("read", {"path": "f"}).behavior == "allow"  # reading it elsewhere is allowed anyway
    engine.mode = "bypass"
    assert engine.decide("write", {"path": "f"}).behavior == "allow"
    os.link(project / "f", project / "g")  # both other names are now where heron looks: in default mode,
    (elsewhere / "f").unlink()  # writing it is a write in the project
    engine.mode = "default"
    assert engine.decide("write", {"path": "f"}).behavior == "allow"


def test_the_search_for_other_names_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "big").mkdir()
    for n in range(50):
        (tmp_path / "big" / str(n)).write_text("")
    (tmp_path / "f").write_text("x")
    os.link(tmp_path / "f", tmp_path / "big" / "zz-link")
    cut = other_names(tmp_path / "f", [tmp_path / "big"], budget=10)
    assert not cut.searched and cut.count == 2
    whole = other_names(tmp_path / "f", [tmp_path, tmp_path / "big"])  # nested places are searched once
    assert whole.searched and whole.found == [tmp_path / "big" / "zz-link"] and whole.all_found
    assert other_names(tmp_path / "big" / "1", [tmp_path]).count == 1  # one name: nothing searched
    assert other_names(tmp_path / "missing", [tmp_path]).count == 1


def test_a_cut_search_asks_in_the_shell_too(engine: PermissionEngine, monkeypatch: pytest.MonkeyPatch) -> None:
    import heron.coding.permissions.links as links

    (engine.cwd / "a").write_text("x")
    os.link(engine.cwd / "a", engine.cwd / "b")
    monkeypatch.setattr(links, "SEARCH_BUDGET", 0)
    monkeypatch.setattr(links.other_names, "__defaults__", (0,))
    decision = engine.decide("bash", {"command": "echo x > a"})
    assert decision.behavior == "ask" and "2 names" in decision.message


# --- bad input: the readers never fail on a short or odd command ----------------------------------


@pytest.mark.parametrize(
    "words",
    [
        ["tar"],
        ["tar", "-x", "-C"],
        ["make", "-f"],
        ["make", "--eval"],
        ["python3", "-c"],
        ["python3", "--"],
        ["perl", "-M"],
        ["node", "--eval="],
        ["awk", "-f"],
        ["sed", "-f"],
        ["find", "-delete"],
        ["shred", "-u"],
        ["unzip", "-d"],
        ["rsync"],
        ["git", "-C"],
        ["bash", "--rcfile"],
        ["xargs", "-I"],
        ["cp", "-r"],
    ],
)
def test_a_short_or_odd_command_is_read_without_error(words: list[str]) -> None:
    assert isinstance(hidden_in(words), Hidden)
    try:
        split_commands(" ".join(words))
    except ShellParseError as exc:
        assert str(exc)  # a clear reason, asked about by the engine
