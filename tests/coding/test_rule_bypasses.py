"""The rules as a boundary of their own: ways around ``Bash(rm:*)``, a path rule and an
``Unsandboxed(echo:*)`` allow rule, each tried with the sandbox on, off in the settings, and
with bubblewrap hidden (issue 37).

The principle checked: a command the rules cannot vouch for is asked about (denied where
nobody can answer, as in print mode), whether or not the sandbox runs - an allow rule for
the program, or the sandbox, never lets it through. For each trick the decision must be
``deny`` or ``ask``; when it is not, the command (or the edit) is run as heron would run it
and the protected file is checked, so a failure says whether the file was really lost.
Ordinary commands must still be allowed, so the rules do not just deny everything.

The end-to-end tests at the bottom run the real ``heron -p`` (a process per run, a local
server speaking the OpenAI wire format) with the sandbox on and off: every trick is one tool
call, each aimed at its own protected file, and the tool results the model receives say the
call was not run.
"""

from __future__ import annotations

import asyncio
import io
import os
import socket
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from heron.agent.tool_meta import ToolCatalog
from heron.ai.abort import AbortSignal
from heron.coding.permissions import Decision, PermissionEngine
from heron.coding.permissions.scopes import Scope
from heron.coding.sandbox import Sandbox, sandbox_policy
from heron.coding.sandbox.bwrap import availability
from heron.coding.sandbox.escalation import escalation_decision
from heron.coding.tools import create_tools
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams, EditParams, WriteParams
from tests.cli.test_print_json_e2e import Project, openai_args, openai_tool_results, project
from tests.support.http_server import LocalServer
from tests.support.sse import openai_reply

__all__ = ["project"]

DENY = ["Bash(rm:*)", "Edit(locked/**)"]
# Allow rules for every program the tricks start with: none of them may let a trick through.
ALLOWS = [
    f"Bash({program}:*)"
    for program in [
        "find",
        "unlink",
        "make",
        "bash",
        "sh",
        "eval",
        "xargs",
        "python3",
        "perl",
        "node",
        "shred",
        "gzip",
        "zip",
        "chrt",
        "shopt",
        "alias",
        "printf",
        "echo",
        "cat",
        "tar",
        "cp",
        "cd",
        "rsync",
        "unzip",
        "patch",
        "awk",
        "sed",
        "truncate",
        "parallel",
        ".",
        "source",
    ]
]
MODES = ["sandbox", "sandbox-off", "no-bwrap"]

# {K}: a project file only `Bash(rm:*)` protects (the sandbox lets commands write the project).
RM_TRICKS = [
    "find . -name {K} -delete",
    "find . -name {K} -exec rm {{}} \\;",
    "find . -name {K} -exec rm {{}} +",
    "find . -name {K} -execdir rm {{}} \\;",
    "unlink {K}",
    "shred -u {K}",
    "printf 'all:\\n\\trm {K}\\n' | make -f -",
    "make -f - <<'EOF'\nall:\n\trm {K}\nEOF",
    "make -f <(printf 'all:\\n\\trm {K}\\n')",
    "make --eval='all: ; rm {K}' -f /dev/null",
    "bash <(echo rm {K})",
    "sh <(echo rm {K})",
    ". <(echo rm {K})",
    "bash -c 'rm {K}'",
    "sh -c 'rm {K}'",
    "eval 'rm {K}'",
    "echo {K} | xargs rm",
    "echo {K} | xargs -I{{}} rm {{}}",
    "echo rm {K} | xargs -I{{}} sh -c '{{}}'",
    "echo rm | xargs -I{{}} {{}} {K}",
    "echo 'rm {K}' | parallel",
    "python3 - <<'EOF'\nimport os\nos.remove('{K}')\nEOF",
    "python3 <<'EOF'\nimport os\nos.remove('{K}')\nEOF",
    "echo 'import os; os.remove(\"{K}\")' | python3",
    "python3 <(echo 'import os; os.remove(\"{K}\")')",
    "python3 /dev/stdin <<< 'import os; os.remove(\"{K}\")'",
    "python3 -c \"import os; getattr(os, 'remove')('{K}')\"",
    "python3 -c \"import os; f = os.remove; f('{K}')\"",
    "perl - <<'EOF'\nunlink '{K}';\nEOF",
    "node - <<'EOF'\nrequire('fs').unlinkSync('{K}')\nEOF",
    "awk 'BEGIN {{ c = \"rm {K}\"; c | getline }}'",
    "rsync --remove-source-files {K} {W}/",
    "rsync -r --delete {W}/tree/ ./",
    "gzip {K}",
    "zip -qm {W}/k.zip {K}",
    "shopt -s expand_aliases\nalias zap=rm\nzap {K}",
    "chrt 0 rm {K}",
    "printf 'rm {K}\\n' > {W}/x.sh; bash {W}/x.sh",
    "printf 'all:\\n\\trm {K}\\n' > {W}/mk; make -f {W}/mk",
    "cp {W}/evil.sh ./run.sh && ./run.sh",
    "bash {W}/evil.sh",
    "{W}/evil.sh",
]
# {L}: a file under `Edit(locked/**)` (read-only in the sandbox); {H}: a hard link to it in the
# project, {F}: a tar with a member `f`, {T}: a tar with `locked/f`, {Z}: a zip with `f`,
# {P}: a patch changing `locked/f`, {S}: a directory holding `locked/f`.
PATH_TRICKS = [
    'python3 -c \'import shutil; shutil.copy("/etc/hostname", "{L}")\'',
    'python3 -c \'import shutil; shutil.copyfile("/etc/hostname", "{L}")\'',
    "python3 - <<'EOF'\nimport shutil\nshutil.copy('/etc/hostname', '{L}')\nEOF",
    "tar -x -C locked -f {F}",
    "tar -xf {F} -C locked",
    "tar xf {F} -C locked",
    "tar -C locked -xf {F}",
    "tar --extract --file={F} --directory=locked",
    "tar -xf {T}",
    "cd locked && tar -xf {F}",
    "unzip -o {Z} -d locked",
    "cp -r {S}/. .",
    "rsync -r {S}/ ./",
    "patch -p0 < {P}",
    "echo gone > {H}",
    "cp /etc/hostname {H}",
    "sed -i s/keep/gone/ {H}",
    "find locked -name f -exec cp /etc/hostname {{}} \\;",
    "echo {L} | xargs cp /etc/hostname",
    'awk \'BEGIN {{ f = "{L}"; print "gone" > f }}\'',
    'perl -e \'open(my $f, ">", "{L}"); print $f "gone"\'',
    'ruby -e \'File.write("{L}", "gone")\'',
    'node -e \'require("fs").writeFileSync("{L}", "gone")\'',
    'echo \'open("{L}", "w").write("gone")\' | python3',
]
# The edit and write tools through a hard link in the project to the locked file.
TOOL_TRICKS = [
    ("edit", {"path": "{H}", "old_text": "keep", "new_text": "gone"}),
    ("write", {"path": "{H}", "content": "gone\n"}),
    ("edit", {"path": "{Y}", "old_text": "keep", "new_text": "gone"}),  # a symlink to it
]
# `Unsandboxed(echo:*)` (the rule heron offers to save for `echo …`) with outside_sandbox, or
# with the sandbox off a `Bash(echo:*)` allow rule in plan mode: neither covers a redirection
# out of the project, to the network, or to a path computed at run time. {O}: outside the
# project and the temp directory; {N}: a listening TCP port on the loopback.
ECHO_TRICKS = [
    "echo leaked > /dev/tcp/127.0.0.1/{N}",
    "echo leaked >/dev/tcp/localhost/{N}",
    "exec 3<>/dev/tcp/127.0.0.1/{N}; echo leaked >&3",
    "echo leaked > /dev/udp/127.0.0.1/{N}",
    "echo leaked > {O}/x",
    "echo leaked >> {O}/x",
    "echo leaked 2> {O}/x",
    "echo leaked &> {O}/x",
    "cd {O} && echo leaked > x",
    "echo leaked > ${{HOME_OUT:-{O}/x}}",
    "echo leaked | tee {O}/x",
    "echo leaked > .git/hooks/x",
]
# What must still run: ordinary commands, in both modes, under the same rules.
ALLOWED = [
    "ls",
    "echo hi",
    "echo hi > ./out.txt",
    "cat {K}",
    "git status",
    "find . -name '*.txt'",
    "python3 -c 'print(1 + 1)'",
    "tar -cf out.tar {K}",
    "tar -tf {F}",
    "tar -xf {F} -C {W}",
    "cp {K} copy.txt",
    "sort -o sorted.txt {K}",
    "python3 tool.py",
    "bash tool.sh",
    "make -f Makefile",
    "echo hi | xargs echo",
    "sed s/keep/kept/ {K}",
    "awk '{{ print $1 }}' {K}",
]
ECHO_ALLOWED = ["echo hi", "echo hi > ./out.txt", "echo hi >> out.txt 2>&1", "echo hi > /dev/null"]


@dataclass
class Place:
    """A project with the protected files, heron's home, a scratch directory in the temp
    directory and one outside it."""

    project: Path
    home: Path
    scratch: Path
    outside: Path
    listener: socket.socket

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def received(self) -> bool:
        """Whether a connection reached the listening port and sent something."""
        self.listener.settimeout(0.5)
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return False
        with conn:
            conn.settimeout(2.0)
            try:
                return bool(conn.recv(100))
            except OSError:
                return False

    @property
    def keep(self) -> Path:
        return self.project / "keep.txt"

    @property
    def locked(self) -> Path:
        return self.project / "locked" / "f"

    def fill(self, text: str) -> str:
        return text.format(
            K="keep.txt",
            L="locked/f",
            H="hl",
            Y="sl",
            W=self.scratch,
            F=self.scratch / "f.tar",
            T=self.scratch / "tree.tar",
            Z=self.scratch / "f.zip",
            P=self.scratch / "locked.diff",
            S=self.scratch / "tree",
            O=self.outside,
            N=self.port,
        )

    def intact(self) -> bool:
        return all(p.exists() and p.read_text() == "keep\n" for p in (self.keep, self.locked))


@pytest.fixture
def place(tmp_path: Path) -> Iterator[Place]:
    outside = Path(os.path.realpath("/var/tmp")) / f"heron-bypass-{os.getpid()}-{tmp_path.name}"
    outside.mkdir()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    try:
        yield _layout(tmp_path, outside, listener)
    finally:
        listener.close()
        for path in sorted(outside.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() else path.rmdir()
        outside.rmdir()


def _layout(tmp_path: Path, outside: Path, listener: socket.socket) -> Place:
    project, home, scratch = tmp_path / "proj", tmp_path / "home", tmp_path / "scratch"
    for directory in (project / "locked", project / ".git" / "hooks", home, scratch / "tree" / "locked"):
        directory.mkdir(parents=True)
    for path in (project / "keep.txt", project / "locked" / "f"):
        path.write_text("keep\n")
    os.link(project / "locked" / "f", project / "hl")
    (project / "sl").symlink_to(project / "locked" / "f")
    (project / "tool.py").write_text("print('tool')\n")
    (project / "tool.sh").write_text("echo tool\n")
    (project / "Makefile").write_text("all:\n\t@echo made\n")
    (scratch / "tree" / "locked" / "f").write_text("gone\n")
    for name, member in (("f.tar", "f"), ("tree.tar", "locked/f")):
        with tarfile.open(scratch / name, "w") as tar:
            info = tarfile.TarInfo(member)
            info.size = 5
            tar.addfile(info, io.BytesIO(b"gone\n"))
    with zipfile.ZipFile(scratch / "f.zip", "w") as archive:
        archive.writestr("f", "gone\n")
    (scratch / "locked.diff").write_text("--- locked/f\n+++ locked/f\n@@ -1 +1 @@\n-keep\n+gone\n")
    (scratch / "evil.sh").write_text("#!/bin/sh\nrm keep.txt\n")
    (scratch / "evil.sh").chmod(0o755)
    return Place(project, home, scratch, outside, listener)


def _settings(rules: dict[str, list[str]], sandbox: str, place: Place) -> list[Scope]:
    data: dict[str, Any] = {"permissions": rules}
    if sandbox == "sandbox-off":
        data["sandbox"] = {"mode": "off"}
    return [Scope("user", place.home / "settings.json", data)]


def _engine(place: Place, scopes: list[Scope]) -> PermissionEngine:
    engine = PermissionEngine.from_scopes(place.project, place.home, scopes, trusted=True)
    tools = create_tools(ToolEnv(cwd=place.project, home=place.home), None)
    engine.tools = ToolCatalog(source=lambda: tools)
    return engine


@pytest.fixture(params=MODES)
def sandbox(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    mode: str = request.param
    if mode == "sandbox" and not availability().ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {availability().reason}")
    if mode == "no-bwrap":
        import heron.coding.sandbox.confine as confine

        real = confine.shutil.which
        monkeypatch.setattr(confine.shutil, "which", lambda name, *a, **k: None if name == "bwrap" else real(name))
    return mode


def _tool_env(place: Place, scopes: list[Scope], engine: PermissionEngine) -> ToolEnv:
    env = ToolEnv(cwd=place.project, home=place.home)
    policy = sandbox_policy(scopes, engine.rules, project=place.project, home=place.home, trusted=True)
    sandbox = Sandbox(lambda: policy)
    env.confine = sandbox.confine
    env.confine_outside = lambda argv, cwd, _call: sandbox.confine(argv, cwd, outside=True)
    return env


def _bash(env: ToolEnv, command: str, outside: bool = False) -> str:
    params = BashParams(command=command, timeout=20, outside_sandbox=outside or None)
    result = asyncio.run(BashTool(env).execute("c", params, AbortSignal(), lambda _: None))
    return "".join(getattr(block, "text", "") for block in result.content)


def _verdict(decision: Decision) -> str:
    """What heron does in print mode: an ask is denied (nobody can answer)."""
    return "deny" if decision.behavior == "ask" else decision.behavior


def _check_command(place: Place, sandbox: str, rules: dict[str, list[str]], trick: str) -> None:
    scopes = _settings(rules, sandbox, place)
    engine = _engine(place, scopes)
    command = place.fill(trick)
    decision = engine.decide("bash", {"command": command})
    if _verdict(decision) == "deny":
        assert decision.message, command
        return
    _bash(_tool_env(place, scopes, engine), command)
    lost = "and the protected file was changed" if not place.intact() else "(the file survived)"
    pytest.fail(f"allowed {lost}: {command!r}")


@pytest.mark.parametrize("trick", RM_TRICKS + PATH_TRICKS)
def test_a_trick_is_denied_or_asked(place: Place, sandbox: str, trick: str) -> None:
    _check_command(place, sandbox, {"deny": DENY}, trick)


@pytest.mark.parametrize("trick", RM_TRICKS + PATH_TRICKS)
def test_an_allow_rule_for_the_program_does_not_let_it_through(place: Place, sandbox: str, trick: str) -> None:
    _check_command(place, sandbox, {"deny": DENY, "allow": ALLOWS}, trick)


@pytest.mark.parametrize(("tool", "args"), TOOL_TRICKS, ids=["edit-hardlink", "write-hardlink", "edit-symlink"])
@pytest.mark.parametrize("mode", ["default", "accept-edits", "bypass"])
def test_the_file_tools_check_every_name_of_the_file(
    place: Place, sandbox: str, tool: str, args: dict[str, str], mode: str
) -> None:
    scopes = _settings({"deny": DENY, "allow": ["Edit", "Write"]}, sandbox, place)
    engine = _engine(place, scopes)
    engine.mode = mode  # type: ignore[assignment]
    filled = {key: place.fill(value) for key, value in args.items()}
    decision = engine.decide(tool, filled)
    if _verdict(decision) == "deny":
        assert "locked" in decision.message or "link" in decision.message, decision.message
        return
    tools = {t.name: t for t in create_tools(_tool_env(place, scopes, engine), None)}
    asyncio.run(
        tools["read"].execute("r", tools["read"].parameters(path=filled["path"]), AbortSignal(), lambda _: None)
    )
    params = EditParams(**filled) if tool == "edit" else WriteParams(**filled)
    asyncio.run(tools[tool].execute("c", params, AbortSignal(), lambda _: None))
    lost = "and the protected file was changed" if not place.intact() else "(the file survived)"
    pytest.fail(f"{tool} allowed {lost}: {filled}")


@pytest.mark.parametrize("trick", ECHO_TRICKS)
def test_a_command_rule_does_not_cover_a_redirection_out_of_the_project(place: Place, sandbox: str, trick: str) -> None:
    command = place.fill(trick)
    if sandbox == "sandbox":
        scopes = _settings({"allow": ["Unsandboxed(echo:*)"]}, sandbox, place)
        engine = _engine(place, scopes)
        decision = engine.decide("bash", {"command": command})
        if decision.behavior == "allow":
            decision = escalation_decision(engine.rules, engine.mode, command, "why not", engine=engine)
        outside = True
    else:  # no sandbox: a Bash allow rule is what lets a command through plan mode
        scopes = _settings({"allow": ["Bash(echo:*)", "Bash(cd:*)", "Bash(exec:*)"]}, sandbox, place)
        engine = _engine(place, scopes)
        engine.mode = "plan"
        decision = engine.decide("bash", {"command": command})
        outside = False
    if _verdict(decision) == "deny":
        assert decision.suggestion is None or "echo:*" not in decision.suggestion, decision.suggestion
        return
    _bash(_tool_env(place, scopes, engine), command, outside=outside)
    written = [str(p) for p in place.outside.rglob("*")] + (["the listener"] if place.received() else [])
    pytest.fail(f"allowed; written: {written}: {command!r}")


@pytest.mark.parametrize("command", ALLOWED)
def test_ordinary_commands_still_run(place: Place, sandbox: str, command: str) -> None:
    for rules in ({"deny": DENY}, {"deny": DENY, "allow": ALLOWS}):
        scopes = _settings(rules, sandbox, place)
        decision = _engine(place, scopes).decide("bash", {"command": place.fill(command)})
        assert decision.behavior == "allow", (command, decision.message)


@pytest.mark.parametrize("command", ECHO_ALLOWED)
def test_the_echo_rule_still_covers_echo_in_the_project(place: Place, command: str) -> None:
    scopes = _settings({"allow": ["Unsandboxed(echo:*)", "Bash(echo:*)"]}, "sandbox", place)
    engine = _engine(place, scopes)
    assert escalation_decision(engine.rules, "default", command, None, engine=engine).behavior == "allow"
    engine.mode = "plan"
    assert engine.decide("bash", {"command": command}).behavior == "allow", command


@pytest.mark.parametrize("trick", ECHO_TRICKS)
def test_the_suggested_rule_allows_that_call_and_no_other(place: Place, trick: str) -> None:
    """The rule heron offers to save is never broader than the call: saved, it lets that very
    command out of the sandbox, and none of the other tricks."""
    engine = _engine(place, _settings({}, "sandbox", place))
    command = place.fill(trick)
    asked = escalation_decision(engine.rules, "default", command, None, engine=engine)
    assert asked.behavior == "ask" and asked.suggestion is not None
    assert asked.suggestion != "Unsandboxed(echo:*)", asked.suggestion
    engine.add_rules("allow", [asked.suggestion], "t")
    assert escalation_decision(engine.rules, "default", command, None, engine=engine).behavior == "allow"
    for other in ECHO_TRICKS:
        if other != trick:
            decision = escalation_decision(engine.rules, "default", place.fill(other), None, engine=engine)
            assert decision.behavior == "ask", (asked.suggestion, other)


@pytest.mark.parametrize("trick", RM_TRICKS + PATH_TRICKS)
def test_following_the_hint_lets_the_command_run(place: Place, trick: str) -> None:
    """An ask names a rule that settles it (print mode's "--allow …" hint is true), and that
    rule is the exact line: it does not open the way for the other tricks."""
    engine = _engine(place, _settings({"deny": DENY}, "sandbox", place))
    command = place.fill(trick)
    decision = engine.decide("bash", {"command": command})
    if decision.behavior == "deny":
        return
    assert decision.suggestion == "Bash(" + " ".join(command.split()) + ")", decision.suggestion
    engine.add_rules("allow", [decision.suggestion], "--allow")
    assert engine.decide("bash", {"command": command}).behavior == "allow"
    others = [place.fill(t) for t in RM_TRICKS + PATH_TRICKS if t != trick]
    assert all(engine.decide("bash", {"command": c}).behavior != "allow" for c in others)


# --- the real heron -p: a process per run, the model's tool calls, the results it reads ------------

E2E_RM = [
    "find . -name {K} -delete",
    "unlink {K}",
    "printf 'all:\\n\\trm {K}\\n' | make -f -",
    "bash <(echo rm {K})",
    "python3 - <<'EOF'\nimport os\nos.remove('{K}')\nEOF",
    "find . -name {K} -exec rm {{}} \\;",
    "echo {K} | xargs rm",
]


def _e2e_project(project: Project, sandbox: str) -> tuple[list[Path], list[Path]]:
    settings: dict[str, Any] = {"permissions": {"deny": DENY, "allow": ALLOWS}}
    if sandbox == "sandbox-off":
        settings["sandbox"] = {"mode": "off"}
    project.write_settings(settings)
    keep = [project.cwd / f"k{n}.txt" for n in range(len(E2E_RM))]
    locked = [project.cwd / "locked" / f"f{n}" for n in range(5)]
    (project.cwd / "locked").mkdir()
    for path in keep + locked:
        path.write_text("keep\n")
    os.link(locked[2], project.cwd / "hl2")
    os.link(locked[3], project.cwd / "hl3")
    os.link(locked[4], project.cwd / "hl4")
    with tarfile.open(project.cwd.parent / "f1.tar", "w") as tar:
        info = tarfile.TarInfo("f1")
        info.size = 5
        tar.addfile(info, io.BytesIO(b"gone\n"))
    return keep, locked


@pytest.mark.parametrize("sandbox", ["sandbox", "sandbox-off"])
def test_heron_p_runs_none_of_the_tricks(project: Project, local_server: LocalServer, sandbox: str) -> None:
    if sandbox == "sandbox" and not availability().ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {availability().reason}")
    keep, locked = _e2e_project(project, sandbox)
    rm_calls = [(f"rm{n}", "bash", {"command": trick.format(K=keep[n].name)}) for n, trick in enumerate(E2E_RM)]
    local_server.queue(openai_reply("", rm_calls), openai_reply("done"))
    result = project.run(*openai_args(local_server), "-p", "go")
    assert result.code == 0, result.err
    seen = openai_tool_results(local_server.requests[-1])
    assert sorted(seen) == sorted(call[0] for call in rm_calls)
    # a process per turn: the path tricks in a second run that continues the session
    path_calls = [
        ("p0", "bash", {"command": 'python3 -c \'import shutil; shutil.copy("/etc/hostname", "locked/f0")\''}),
        ("p1", "bash", {"command": f"tar -xf {project.cwd.parent / 'f1.tar'} -C locked"}),
        ("p2", "edit", {"path": "hl2", "old_text": "keep", "new_text": "gone"}),
        ("p3", "write", {"path": "hl3", "content": "gone\n"}),
        ("p4", "bash", {"command": "echo gone > hl4"}),
    ]
    local_server.queue(openai_reply("", path_calls), openai_reply("done"))
    result = project.run(*openai_args(local_server), "-p", "--continue", "go on")
    assert result.code == 0, result.err
    seen |= openai_tool_results(local_server.requests[-1])
    for call_id, text in seen.items():
        assert text.startswith(("Permission needed", "Permission denied")), (call_id, text)
    assert "--allow 'Bash(python3 - <<'\"'\"'EOF'\"'\"' import os" in seen["rm4"]  # the exact line, quoted
    assert [p.read_text() for p in keep + locked] == ["keep\n"] * (len(keep) + len(locked))


def test_heron_p_keeps_echo_to_the_network_in_the_sandbox(
    place: Place, project: Project, local_server: LocalServer
) -> None:
    if not availability().ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {availability().reason}")
    leak = f"echo leaked > /dev/tcp/127.0.0.1/{place.port}"
    outside = place.outside / "x"
    calls = [
        ("t1", "bash", {"command": leak, "outside_sandbox": True, "justification": "a test"}),
        ("t2", "bash", {"command": f"echo leaked > {outside}", "outside_sandbox": True, "justification": "a test"}),
        ("t3", "bash", {"command": "echo hi > ./out.txt", "outside_sandbox": True, "justification": "a test"}),
    ]
    local_server.queue(openai_reply("", calls), openai_reply("done"))
    result = project.run(*openai_args(local_server), "--allow", "Unsandboxed(echo:*)", "-p", "go")
    assert result.code == 0, result.err
    seen = openai_tool_results(local_server.requests[-1])
    assert seen["t1"].startswith("Permission needed") and seen["t2"].startswith("Permission needed")
    assert "Unsandboxed(echo leaked > /dev/tcp/127.0.0.1/" in seen["t1"]
    assert not place.received() and not outside.exists()
    assert (project.cwd / "out.txt").read_text() == "hi\n"  # inside the project: the rule covers it
    sessions = [p.read_text().replace(" ", "") for p in (project.home / "sessions").rglob("*.jsonl")]
    assert any('"escalated":true' in text for text in sessions)
