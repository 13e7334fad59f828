"""The sandbox as a boundary: a battery of ways around the rule parser, run in it (issues 24, 37).

Each trick is a command a model could write to delete or change a file the user protected.
With the sandbox on, none of them may change anything in three places: a directory of the
project under an ``Edit(locked/**)`` deny rule (visible, read-only), a directory outside the
project and the temp directory (visible, read-only), and heron's home (hidden). The project
itself stays writable, and a command sees no process of heron's.

The battery runs its commands as root and as an unprivileged user (``user``, from
tests/support/sandbox_fixtures.py): root keeps capabilities a normal user lacks, and with
them a command could unmount what hides heron's home, remount a read-only directory or ``/``
writable, or lift the sandbox's ``/proc`` off the machine's (:data:`ROOT_TRICKS`). Without
bubblewrap (``no_bwrap``: a ``PATH`` without it) commands run unconfined, and the note that
says so is said once per session - in one process and in a process per turn alike.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from heron.agent.tools import ToolResult
from heron.ai.types import ToolResultMessage, UserMessage
from heron.coding.permissions import PermissionEngine
from heron.coding.permissions.rules import parse_rule
from heron.coding.permissions.scopes import Scope
from heron.coding.sandbox import Sandbox, sandbox_policy
from heron.coding.sandbox.bwrap import HARDENINGS, availability
from heron.coding.sandbox.confine import NOTE_DETAIL, note_said
from heron.coding.sandbox.policy import literal_base
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.session.store import SessionStore
from tests.support.http_server import LocalServer, Recorded, Reply
from tests.support.sandbox_fixtures import (
    User,
    bash_result,
    bash_tool,
    layout,
    no_bwrap,
    outside,
    restore,
    run_bash,
    sandbox_ready,
    snapshot,
    user,
    workdir,
)
from tests.support.sse import openai_reply

__all__ = ["no_bwrap", "outside", "sandbox_ready", "user", "workdir"]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox is Linux's")

# {T}: a protected file; {D}: its directory; {W}: a scratch directory in the temp directory.
# Each deletes or changes the file, or adds one next to it.
TRICKS = [
    "rm {T}",
    "rm -rf {D}",
    "env -S 'rm {T}'",
    "trap 'rm {T}' EXIT",
    ". <(echo rm {T})",
    "hash -p /bin/rm zap; zap {T}",
    "printf 'rm {T}\\n' > {W}/rc; BASH_ENV={W}/rc bash -c true",
    "git -c alias.zap='!rm {T}' zap",
    "ln -sf /bin/rm ./zap && ./zap {T}; rm -f ./zap",
    "awk 'BEGIN {{ system(\"rm {T}\") }}'",
    "sed -n '1e rm {T}' /etc/hostname",
    "tar cf {W}/t.tar --remove-files {T}",
    "printf 'all:\\n\\trm {T}\\n' > {W}/mk; make -f {W}/mk",
    "python3 -c 'import os; os.remove(\"{T}\")'",
    "python3 -c 'import shutil; shutil.rmtree(\"{D}\")'",
    "find {D} -name f -delete",
    "perl -e 'unlink \"{T}\"'",
    "mv {T} {W}/gone",
    "mv {D} {W}/gone-dir",
    "truncate -s 0 {T}",
    "echo x > {T}",
    "echo x >> {T}",
    "cp /dev/null {T}",
    "dd if=/dev/zero of={T} count=1",
    "printf x | dd of={T} conv=notrunc",
    "sort -o {T} /etc/hostname",
    "tee {T} < /dev/null",
    "echo {T} | xargs rm",
    "eval 'r''m {T}'",
    "$(echo rm) {T}",
    "command rm {T}",
    "builtin eval 'rm {T}'",
    "bash -c 'rm {T}'",
    "sh -c 'rm {T}'",
    "nohup rm {T}",
    "timeout 5 rm {T}",
    "unlink {T}",
    "shred -u {T}",
    "install /dev/null {T}",
    'python3 -c \'open("{T}", "w").write("x")\'',
    "cd {D} && echo x > f",
    "cd {D} && echo x > new",
    "tar cf {W}/n.tar -C /etc hostname && tar -xf {W}/n.tar -C {D}",
    'awk \'BEGIN {{ print "x" > "{T}" }}\'',
    "ln -f /etc/hostname {T}",
    "chmod 000 {T}",
    "setsid rm {T}",
    "(rm {T} &); sleep 0.2",
    "exec rm {T}",
    "cp /etc/hostname {D}/",
    "perl -i -pe 's/keep/gone/' {T}",
    "sed -i s/keep/gone/ {T}",
    'ln -s {T} {W}/link && rm -f "$(readlink -f {W}/link)"',
    "mkdir -p {W}/m && mount --bind {W}/m {D}; echo x > {D}/f",
    "unshare -r rm {T}",
    "nsenter -t 1 -m rm {T}",
    "kill -9 -1; rm {T}",
]


# What root could do to the sandbox itself if it kept its capabilities (issue 37). {H}: heron's
# home (hidden; its models.json holds a key); {D}: the denied directory; {O}: the directory
# outside; {W}: scratch in the temp directory; {P}: a process outside the sandbox, of the
# same user, with a key in its environment.
ROOT_TRICKS = [
    "cat {H}/models.json",
    "umount {H}; cat {H}/models.json",
    "umount -l {H}; cat {H}/models.json",
    "umount -R {H}; ls -A {H}; cat {H}/models.json",
    "umount {D}; echo x > {D}/f",
    "mount -o remount,rw,bind {D} && echo x > {D}/f",
    "mount -o remount,rw,bind {O} && echo x > {O}/f",
    "mount -o remount,rw / ; echo x > {O}/f; touch {D}/new",
    "mount -o remount,rw,bind / ; echo x > {O}/f",
    "mkdir -p {W}/m && mount --bind {W}/m {H} && ls -A {H}",
    "mount -t tmpfs none {D} && echo x > {D}/f",
    "umount /proc; cat /proc/{P}/environ",
    "umount -l /proc; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep HERON_BATTERY",
    "mkdir -p {W}/p && mount -t proc proc {W}/p && cat {W}/p/{P}/environ",
    "cat /proc/{P}/environ /proc/{P}/cmdline",
    "cat /proc/1/root{H}/models.json",
    "unshare -rm sh -c 'umount {H}; cat {H}/models.json'",
    "unshare -m sh -c 'umount -l {H}; cat {H}/models.json; mount -o remount,rw,bind {D}; echo x > {D}/f'",
    "unshare -rm sh -c 'mount -o remount,rw,bind {D} && echo x > {D}/f'",
    "unshare -rmp --fork --mount-proc sh -c 'cat /proc/{P}/environ'",
    "nsenter -t 1 -m -p cat {H}/models.json",
    "chroot / cat {H}/models.json",
    'python3 -c \'import ctypes; ctypes.CDLL(None).umount2(b"{H}", 2); print(open("{H}/models.json").read())\'',
    'python3 -c \'import os; d = os.stat("{O}").st_dev; os.mknod("{W}/disk", 0o60600, d);'
    ' open("{W}/disk", "rb").read(1); print("RAW-DISK")\'',
]


def test_no_trick_changes_a_protected_file(workdir: Path, outside: Path, user: User, sandbox_ready: None) -> None:
    project, home, targets = layout(workdir, user, outside)
    rules = [parse_rule("Edit(locked/**)", "deny", "test")]
    policy = sandbox_policy([], rules, project=project, home=home, trusted=False)
    tool = bash_tool(project, home, policy, user)
    before = {name: snapshot(path) for name, path in targets.items()}
    scratch = workdir / "scratch"  # in the temp directory: commands may write there
    scratch.mkdir()
    user.own(scratch)
    escaped: list[str] = []
    for trick in TRICKS:
        for name, directory in targets.items():
            _text, details = run_bash(tool, trick.format(T=directory / "f", D=directory, W=scratch))
            assert details.get("sandboxed") is True
            if snapshot(directory) != before[name]:
                escaped.append(f"{name}: {trick}")
                restore(directory, user)
    assert not escaped, "escaped the sandbox:\n" + "\n".join(escaped)
    assert len(TRICKS) >= 51


@pytest.fixture
def key_holder(user: User) -> Iterator[tuple[int, str]]:
    """A process of the user's outside the sandbox (as heron is) with a key in its
    environment: its pid and the key."""
    key = "sk-battery-" + secrets.token_hex(12)
    env = {"PATH": os.environ.get("PATH", os.defpath), "HERON_BATTERY_KEY": key}
    holder = subprocess.Popen([*user.prefix, "sleep", "600"], env=env)
    try:
        yield holder.pid, key
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()


def test_root_cannot_undo_the_sandbox(
    workdir: Path, outside: Path, user: User, key_holder: tuple[int, str], sandbox_ready: None
) -> None:
    """Run as root, a command in the sandbox has no capability left to unmount the cover over
    heron's home, remount a read-only directory or ``/`` writable, or reach heron's ``/proc``."""
    project, home, targets = layout(workdir, user, outside)
    pid, key = key_holder
    (home / "models.json").write_text(json.dumps({"providers": {"p": {"apiKey": key}}}))
    scratch = workdir / "scratch"
    scratch.mkdir()
    user.own(home, scratch)
    rules = [parse_rule("Edit(locked/**)", "deny", "test")]
    tool = bash_tool(project, home, sandbox_policy([], rules, project=project, home=home, trusted=False), user)
    before = {name: snapshot(path) for name, path in targets.items()}
    places = {"H": home, "D": targets["denied"], "O": targets["outside"], "W": scratch, "P": pid}
    escaped: list[str] = []
    for trick in ROOT_TRICKS:
        text, details = run_bash(tool, trick.format(**places))
        assert details.get("sandboxed") is True
        if key in text or "RAW-DISK" in text:
            escaped.append(f"read: {trick}")
        for name, directory in targets.items():
            if snapshot(directory) != before[name]:
                escaped.append(f"{name}: {trick}")
                restore(directory, user)
    assert not escaped, "escaped the sandbox:\n" + "\n".join(escaped)
    assert key in (home / "models.json").read_text()  # the key was there to find


def test_a_command_in_the_sandbox_has_no_capability(workdir: Path, user: User, sandbox_ready: None) -> None:
    project, home, _targets = layout(workdir, user)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), user)
    text, _ = run_bash(tool, "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status")
    status = dict(re.findall(r"^(\w+):\s+(\w+)$", text, re.MULTILINE))
    assert {status[k] for k in ("CapInh", "CapPrm", "CapEff", "CapAmb")} == {"0" * 16}, text
    assert status["NoNewPrivs"] == "1"  # no set-user-ID program gives them back
    state = availability()
    if "--unshare-user" in state.hardening:
        assert status["CapBnd"] == "0" * 16  # nor any program it runs
    # the probe the user's own heron makes picks a way to drop them (none is needed by a user
    # who has none, and root gets no sandbox without one)
    probe = "from heron.coding.sandbox.bwrap import availability as a; s = a(); print(s.ok, list(s.hardening))"
    done = subprocess.run([user.python(workdir), "-c", probe], capture_output=True, text=True, check=True)
    ok, hardening = done.stdout.split(" ", 1)
    assert ok == "True", done.stdout + done.stderr
    if user.name == "root":
        assert tuple(json.loads(hardening.replace("'", '"'))) in HARDENINGS


def test_a_unix_socket_is_hidden_by_a_read_deny_rule(workdir: Path, user: User, sandbox_ready: None) -> None:
    """The network namespace does not cover sockets on the file system: a command reaches
    one its user may open, unless a ``Read`` deny rule names it (docs/permissions.md)."""
    project, home, _targets = layout(workdir, user)
    path = workdir / "service.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(4)
    user.own(path)
    connect = f'python3 -c \'import socket; socket.socket(socket.AF_UNIX).connect("{path}"); print("CONNECTED")\''
    try:
        for rules, reached in (([], True), ([parse_rule(f"Read({path})", "deny", "t")], False)):
            policy = sandbox_policy([], rules, project=project, home=home, trusted=False)
            text, _ = run_bash(bash_tool(project, home, policy, user), connect)
            assert ("CONNECTED" in text) is reached, text
    finally:
        listener.close()


def test_root_in_the_sandbox_cannot_write_another_users_project(tmp_path: Path, sandbox_ready: None) -> None:
    """Without capabilities root is a user like another: file permissions apply to it."""
    if os.geteuid() != 0:
        pytest.skip(f"the root case needs a test process run as root (CI runs as root); this one is uid {os.geteuid()}")
    project, home, _targets = layout(tmp_path, User("root"))
    (project / "theirs.txt").write_text("keep\n")
    os.chown(project / "theirs.txt", 1000, 1000)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), User("root"))
    text, _ = run_bash(tool, "echo x >> theirs.txt; echo mine > mine.txt")
    assert "Permission denied" in text and (project / "theirs.txt").read_text() == "keep\n"
    assert (project / "mine.txt").read_text() == "mine\n"  # what root owns stays writable


def test_the_project_and_the_temp_dir_stay_writable_between_calls(
    workdir: Path, user: User, sandbox_ready: None
) -> None:
    project, home, _targets = layout(workdir, user)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), user)
    script = workdir / "s.sh"  # the temp directory: shared with the machine, writable
    text, _ = run_bash(tool, f"echo made > made.txt && printf 'echo from-tmp' > {script} && cat made.txt")
    assert text.strip() == "made" and (project / "made.txt").read_text() == "made\n"
    text, _ = run_bash(tool, f"bash {script}")
    assert text.strip() == "from-tmp" and script.read_text() == "echo from-tmp"


def test_a_command_sees_no_process_of_heron_and_leaves_none(workdir: Path, user: User, sandbox_ready: None) -> None:
    project, home, _targets = layout(workdir, user)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), user)
    text, _ = run_bash(tool, f"ls /proc | grep -c '^[0-9]' ; test -e /proc/{os.getpid()}/environ && echo SEEN")
    assert "SEEN" not in text and int(text.split()[0]) < 10
    marker = f"sleep-{os.getpid()}"
    run_bash(tool, f"setsid bash -c 'exec -a {marker} sleep 300' & nohup sleep 301 >/dev/null 2>&1 & echo started")
    survivors = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker.encode() in _cmdline(p)]
    assert survivors == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_read_only_mode_and_the_network(workdir: Path, user: User, sandbox_ready: None) -> None:
    project, home, _targets = layout(workdir, user)
    scopes = [Scope("user", home / "settings.json", {"sandbox": {"mode": "read-only"}})]
    tool = bash_tool(project, home, sandbox_policy(scopes, [], project=project, home=home, trusted=False), user)
    text, details = run_bash(tool, "echo x > in-project.txt")
    assert details["exit_code"] != 0 and "Read-only file system" in text
    assert not (project / "in-project.txt").exists()
    text, _ = run_bash(
        tool, "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' || echo NO-NET"
    )
    assert "NO-NET" in text


def test_an_untrusted_project_may_tighten_but_not_loosen(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "h"
    loosen = Scope("project", project / ".heron/settings.json", {"sandbox": {"mode": "off", "network": True}})
    policy = sandbox_policy([loosen], [], project=project, home=home, trusted=False)
    assert policy.mode == "workspace-write" and policy.network is False and len(policy.warnings) == 2
    assert sandbox_policy([loosen], [], project=project, home=home, trusted=True).mode == "off"
    tighten = Scope("project", project / ".heron/settings.json", {"sandbox": {"mode": "read-only"}})
    assert sandbox_policy([tighten], [], project=project, home=home, trusted=False).mode == "read-only"
    bad = Scope("user", home / "settings.json", {"sandbox": {"mode": "loose", "writable": "x"}})
    assert len(sandbox_policy([bad], [], project=project, home=home, trusted=False).warnings) == 2


def test_rules_the_kernel_can_express(tmp_path: Path) -> None:
    assert literal_base("locked/**", tmp_path) == tmp_path / "locked"
    assert literal_base("./secrets/key.txt", tmp_path) == tmp_path / "secrets/key.txt"
    assert literal_base("/etc/**", tmp_path) == Path("/etc")
    assert literal_base("*.lock", tmp_path) is None and literal_base("src/*.py", tmp_path) is None
    assert literal_base("docs", tmp_path) is None  # a bare name matches at any depth: the rule parser's
    rules = [
        parse_rule("Read(./secrets/**)", "deny", "t"),
        parse_rule("Write(/srv/out/**)", "allow", "t"),
        parse_rule("Edit(src/**)", "allow", "t"),
    ]
    policy = sandbox_policy([], rules, project=tmp_path, home=tmp_path / "h", trusted=False)
    assert policy.hidden == (tmp_path / "secrets",) and policy.writable == (Path("/srv/out"),)


# --- without bubblewrap: unconfined, and said once per session -----------------------------


def _said_in(result: ToolResult) -> bool:
    text = "".join(getattr(block, "text", "") for block in result.content)
    return text.startswith("[sandbox unavailable: bubblewrap (bwrap) is not installed")


def _record(store: SessionStore, result: ToolResult) -> None:
    store.append_message(UserMessage(content="go"))
    store.append_message(
        ToolResultMessage(tool_call_id="c", tool_name="bash", content=list(result.content), details=result.details)
    )


def test_without_bubblewrap_the_note_is_said_once_per_session(
    workdir: Path, user: User, no_bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The note is derived from the session file: a later command of the session, a new
    process on it (the store opened again) and a branch that has it say nothing; a new
    session and a branch from before it say it again."""
    monkeypatch.setenv("PATH", no_bwrap)
    project, home, targets = layout(workdir, user)
    policy = sandbox_policy([], [], project=project, home=home, trusted=False)
    store = SessionStore.create(project, path=home / "one.jsonl")
    store.append_message(UserMessage(content="start"))
    before_note = store.leaf_id

    def tool_on(session: SessionStore) -> BashTool:
        return bash_tool(project, home, policy, user, Sandbox(lambda: policy, said=lambda r: note_said(session, r)))

    first = bash_result(tool_on(store), f"cat {targets['home']}/f; id -u")
    text = "".join(getattr(block, "text", "") for block in first.content)
    assert _said_in(first) and "keep" in text  # unconfined: heron's home is there to read
    assert text.split()[-1] == str(user.uid if user.uid is not None else os.getuid())
    assert first.details is not None and first.details["sandboxed"] is False
    assert first.details[NOTE_DETAIL].startswith("bubblewrap (bwrap) is not installed")
    _record(store, first)
    assert not _said_in(bash_result(tool_on(store), "true"))
    store.close()
    again = SessionStore.open(home / "one.jsonl")  # the next ``-p --continue`` process
    assert not _said_in(bash_result(tool_on(again), "true"))
    assert before_note is not None
    again.branch(before_note)  # ``/tree`` back to before the note: that branch has not said it
    assert _said_in(bash_result(tool_on(again), "true"))
    other = SessionStore.create(project, path=home / "two.jsonl")
    assert _said_in(bash_result(tool_on(other), "true"))
    # a Sandbox without a session (a tool used on its own) says it once itself
    alone = bash_tool(project, home, policy, user)
    assert _said_in(bash_result(alone, "true")) and not _said_in(bash_result(alone, "true"))
    again.close()


class _OneCommandATurn:
    """A model that runs one bash command a turn and then answers (the same replies for
    every drive), keeping every request body."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: Recorded) -> Reply:
        body = request.json()
        self.bodies.append(body)
        last = body["messages"][-1]
        if last["role"] == "tool":
            return openai_reply("done")
        text = last["content"] if isinstance(last["content"], str) else last["content"][0]["text"]
        number = text.split(":")[0].removeprefix("turn ")
        return openai_reply("", [(f"call_{number}", "bash", {"command": f"echo ran {number}"})])


def test_without_bubblewrap_one_process_and_a_process_per_turn_send_the_same_bytes(
    workdir: Path, user: User, no_bwrap: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real ``heron`` on a machine without bubblewrap: one ``--mode rpc`` process and a
    ``-p``/``-p --continue`` process per turn send the same requests, and the model reads
    that its commands are unconfined once in the session."""
    from tests.cli.test_context_restarts import drive_print, drive_rpc, make_project, normalised

    monkeypatch.setenv("HERON_TEST_PYTHON", user.python(workdir))
    turns, bodies = 3, {}
    for name, drive in (("rpc1", drive_rpc), ("prnt", drive_print)):
        model = _OneCommandATurn()
        server = LocalServer(responder=model)
        try:
            cwd, env = make_project(workdir / name, server)
            env["PATH"] = no_bwrap
            user.own(workdir / name)
            assert drive(cwd, env, turns) == ["done"] * turns
        finally:
            server.close()
        bodies[name] = normalised(model.bodies, workdir / name)
    assert bodies["rpc1"] == bodies["prnt"]
    last = json.loads(bodies["prnt"][-1])
    notes = [m for m in last["messages"] if m["role"] == "tool" and "[sandbox unavailable:" in json.dumps(m)]
    assert len(notes) == 1 and len(bodies["prnt"]) == 2 * turns


# --- with the sandbox off: the rule parser still sees through the named forms ---------------

RM_FORMS = [
    "env -S 'rm f'",
    "env --split-string='rm f'",
    "trap 'rm f' EXIT",
    ". <(echo rm f)",
    "source /dev/stdin <<< 'rm f'",
    "hash -p /bin/rm zap; zap f",
    "BASH_ENV=/tmp/rc bash -c true",
    "export BASH_ENV=/tmp/rc; bash -c true",
    "git -c alias.zap='!rm f' zap",
    "ln -s /bin/rm zap; ./zap f",
    "awk 'BEGIN { system(\"rm f\") }'",
    "awk 'BEGIN { system(cmd) }'",
    "sed -n '1e rm f' a",
    "sed 's/x/rm f/e' a",
    "tar cf a.tar --remove-files f",
    "tar cf a.tar --checkpoint-action=exec='rm f' a",
    "python3 -c 'import os; os.remove(\"f\")'",
    "python3 -c 'import shutil; shutil.rmtree(\"d\")'",
    "python3 -c 'import os; os.system(\"rm f\")'",
    "python3 -c 'import os, sys; os.remove(sys.argv[1])' f",
    "perl -e 'unlink \"f\"'",
    'node -e \'require("fs").rmSync("f")\'',
]
EDIT_FORMS = [
    "cd locked && echo x > f",
    "cd ./locked; rm f",
    "sort -o locked/f a",
    "tar -x -C locked -f a.tar",
    "tar xf a.tar --directory=locked",
    "awk '{ print > \"locked/f\" }' a",
    'python3 -c \'open("locked/f", "w").write("x")\'',
    "sed -n 'w locked/f' a",
]
ALLOWED_FORMS = ["env FOO=1 ls", "trap - EXIT", "git -c color.ui=false status", "sort -o out.txt a", "make test"]


def _engine(tmp_path: Path) -> PermissionEngine:
    from heron.agent.tool_meta import ToolCatalog
    from heron.coding.tools import create_tools

    scopes = [Scope("user", tmp_path / "s.json", {"permissions": {"deny": ["Bash(rm:*)", "Edit(locked/**)"]}})]
    engine = PermissionEngine.from_scopes(tmp_path, tmp_path / "home", scopes, trusted=True)
    tools = create_tools(ToolEnv(cwd=tmp_path), None)
    engine.tools = ToolCatalog(source=lambda: tools)
    return engine


@pytest.mark.parametrize("command", RM_FORMS + EDIT_FORMS)
def test_the_rule_parser_blocks_the_named_forms_and_says_why(tmp_path: Path, command: str) -> None:
    decision = _engine(tmp_path).decide("bash", {"command": command})
    assert decision.behavior in ("deny", "ask"), command
    assert decision.message  # the model is told which rule, or why the rules cannot vouch for it


@pytest.mark.parametrize("command", ALLOWED_FORMS)
def test_ordinary_commands_still_pass(tmp_path: Path, command: str) -> None:
    assert _engine(tmp_path).decide("bash", {"command": command}).behavior == "allow"


def test_a_git_worktree_can_commit_in_the_sandbox(tmp_path: Path, sandbox_ready: None) -> None:
    main, worktree, home = tmp_path / "main", tmp_path / "wt", tmp_path / "home"
    home.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "a.txt").write_text("a\n")
    subprocess.run([*git, "-C", str(main), "add", "."], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(worktree)], check=True)
    tool = bash_tool(worktree, home, sandbox_policy([], [], project=worktree, home=home, trusted=False), User("self"))
    text, details = run_bash(
        tool,
        "echo b > b.txt && git add b.txt && git -c user.email=t@e -c user.name=t commit -qm two"
        " && git log --oneline | wc -l",
    )
    assert details["exit_code"] == 0 and text.strip() == "2", text


def test_a_project_inside_heron_home_stays_visible_and_the_rest_of_home_hidden(
    workdir: Path, user: User, sandbox_ready: None
) -> None:
    home = workdir / "home"
    project = home / "work" / "t001"  # as heron batch puts a task's work directory
    project.mkdir(parents=True)
    (home / "work" / "t002").mkdir()
    (home / "models.json").write_text('{"providers": {}}')
    (home / "sessions").mkdir()
    user.own(home)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), user)
    command = (
        f"echo ok > made; cat {home}/models.json 2>/dev/null | wc -c;"
        f" ls -A {home}/sessions | wc -l; ls -A {home}/work/t002 | wc -l"
    )
    text, details = run_bash(tool, command)
    assert (project / "made").read_text() == "ok\n"
    (home / "sessions" / "s.jsonl").write_text("x")
    user.own(home)
    text, details = run_bash(tool, command)
    assert text.split() == ["0", "0", "0"], text
    assert details["sandboxed"] is True


def test_a_command_meeting_the_sandbox_edge_is_told_which(workdir: Path, user: User, sandbox_ready: None) -> None:
    project, home, _targets = layout(workdir, user)
    tool = bash_tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False), user)
    text, _ = run_bash(tool, "echo x > /etc/heron-edge-test")
    assert "Read-only file system" in text and '"sandbox": {"writable": [PATH]}' in text
    text, _ = run_bash(
        tool, "getent hosts example.invalid.test || echo 'curl: (6) Could not resolve host: x' >&2; exit 6"
    )
    assert "gives commands no network" in text
    text, _ = run_bash(tool, "exit 3")
    assert "sandbox" not in text.lower()
