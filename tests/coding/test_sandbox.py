"""The sandbox as a boundary: a battery of ways around the rule parser, run in it (issue 24).

Each trick is a command a model could write to delete or change a file the user protected.
With the sandbox on, none of them may change anything in three places: a directory of the
project under an ``Edit(locked/**)`` deny rule (visible, read-only), a directory outside the
project and the temp directory (visible, read-only), and heron's home (hidden). The project itself stays writable, and a
command sees no process of heron's.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from heron.ai.abort import AbortSignal
from heron.coding.permissions import PermissionEngine
from heron.coding.permissions.rules import parse_rule
from heron.coding.permissions.scopes import Scope
from heron.coding.sandbox import Sandbox, SandboxPolicy, sandbox_policy
from heron.coding.sandbox.bwrap import availability
from heron.coding.sandbox.policy import literal_base
from heron.coding.tools.bash import BashTool
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.params import BashParams

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


@pytest.fixture(scope="module")
def sandbox_ready() -> None:
    state = availability()
    if not state.ok:
        pytest.fail(f"the sandbox must run on Linux CI machines: {state.reason}")


def _snapshot(root: Path) -> list[tuple[str, bytes, int]]:
    if not root.exists():
        return []
    return sorted(
        (str(p.relative_to(root)), p.read_bytes() if p.is_file() else b"", stat.S_IMODE(p.lstat().st_mode))
        for p in [root, *root.rglob("*")]
    )


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside the project and outside the temp directory (which commands may write)."""
    path = Path(tempfile.mkdtemp(prefix="heron-sandbox-test-", dir="/var/tmp"))
    try:
        yield path
    finally:
        for entry in [path, *path.rglob("*")]:
            os.chmod(entry, 0o700 if entry.is_dir() else 0o600)
        shutil.rmtree(path, ignore_errors=True)


def _layout(tmp_path: Path, outside: Path | None = None) -> tuple[Path, Path, dict[str, Path]]:
    project, home = tmp_path / "proj", tmp_path / "home"
    targets = {"denied": project / "locked", "home": home / "sessions"}
    if outside is not None:
        targets["outside"] = outside / "dir"
    for directory in targets.values():
        directory.mkdir(parents=True)
        (directory / "f").write_text("keep\n")
    return project, home, targets


def _tool(project: Path, home: Path, policy: SandboxPolicy) -> BashTool:
    env = ToolEnv(cwd=project, home=home)
    env.confine = Sandbox(lambda: policy).confine
    return BashTool(env)


def _run(tool: BashTool, command: str) -> tuple[str, dict[str, object]]:
    result = asyncio.run(tool.execute("c", BashParams(command=command, timeout=20), AbortSignal(), lambda _: None))
    text = "".join(getattr(block, "text", "") for block in result.content)
    return text, dict(result.details or {})


def test_no_trick_changes_a_protected_file(tmp_path: Path, outside: Path, sandbox_ready: None) -> None:
    project, home, targets = _layout(tmp_path, outside)
    rules = [parse_rule("Edit(locked/**)", "deny", "test")]
    policy = sandbox_policy([], rules, project=project, home=home, trusted=False)
    tool = _tool(project, home, policy)
    before = {name: _snapshot(path) for name, path in targets.items()}
    scratch = tmp_path / "scratch"  # in the temp directory: commands may write there
    scratch.mkdir()
    escaped: list[str] = []
    for trick in TRICKS:
        for name, directory in targets.items():
            _text, details = _run(tool, trick.format(T=directory / "f", D=directory, W=scratch))
            assert details.get("sandboxed") is True
            if _snapshot(directory) != before[name]:
                escaped.append(f"{name}: {trick}")
                directory.mkdir(parents=True, exist_ok=True)
                for path in [directory, *directory.rglob("*")]:
                    os.chmod(path, 0o755 if path.is_dir() else 0o644)
                (directory / "f").write_text("keep\n")
    assert escaped == [], escaped
    assert len(TRICKS) >= 51


def test_the_project_and_the_temp_dir_stay_writable_between_calls(tmp_path: Path, sandbox_ready: None) -> None:
    project, home, _targets = _layout(tmp_path)
    tool = _tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False))
    script = tmp_path / "s.sh"  # the temp directory: shared with the machine, writable
    text, _ = _run(tool, f"echo made > made.txt && printf 'echo from-tmp' > {script} && cat made.txt")
    assert text.strip() == "made" and (project / "made.txt").read_text() == "made\n"
    text, _ = _run(tool, f"bash {script}")
    assert text.strip() == "from-tmp" and script.read_text() == "echo from-tmp"


def test_a_command_sees_no_process_of_heron_and_leaves_none(tmp_path: Path, sandbox_ready: None) -> None:
    project, home, _targets = _layout(tmp_path)
    tool = _tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False))
    text, _ = _run(tool, f"ls /proc | grep -c '^[0-9]' ; test -e /proc/{os.getpid()}/environ && echo SEEN")
    assert "SEEN" not in text and int(text.split()[0]) < 10
    marker = f"sleep-{os.getpid()}"
    _run(tool, f"setsid bash -c 'exec -a {marker} sleep 300' & nohup sleep 301 >/dev/null 2>&1 & echo started")
    survivors = [p for p in Path("/proc").iterdir() if p.name.isdigit() and marker.encode() in _cmdline(p)]
    assert survivors == []


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""


def test_read_only_mode_and_the_network(tmp_path: Path, sandbox_ready: None) -> None:
    project, home, _targets = _layout(tmp_path)
    scopes = [Scope("user", home / "settings.json", {"sandbox": {"mode": "read-only"}})]
    tool = _tool(project, home, sandbox_policy(scopes, [], project=project, home=home, trusted=False))
    text, details = _run(tool, "echo x > in-project.txt")
    assert details["exit_code"] != 0 and "Read-only file system" in text
    assert not (project / "in-project.txt").exists()
    text, _ = _run(tool, "python3 -c 'import socket; socket.create_connection((\"1.1.1.1\", 53), 2)' || echo NO-NET")
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


def test_an_unavailable_sandbox_is_said_once_and_the_command_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import heron.coding.sandbox.confine as confine

    monkeypatch.setattr(confine.shutil, "which", lambda _name: None)
    monkeypatch.setattr(confine, "_warned", set())
    project, home, _targets = _layout(tmp_path)
    tool = _tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False))
    first, details = _run(tool, "echo ran")
    second, _ = _run(tool, "echo ran")
    assert first.startswith("[sandbox unavailable: bubblewrap (bwrap) is not installed") and "ran" in first
    assert details["sandboxed"] is False and second.strip() == "ran"


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
    import subprocess

    main, worktree, home = tmp_path / "main", tmp_path / "wt", tmp_path / "home"
    home.mkdir()
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q", str(main)], check=True)
    (main / "a.txt").write_text("a\n")
    subprocess.run([*git, "-C", str(main), "add", "."], check=True)
    subprocess.run([*git, "-C", str(main), "commit", "-qm", "one"], check=True)
    subprocess.run([*git, "-C", str(main), "worktree", "add", "-q", str(worktree)], check=True)
    tool = _tool(worktree, home, sandbox_policy([], [], project=worktree, home=home, trusted=False))
    text, details = _run(
        tool,
        "echo b > b.txt && git add b.txt && git -c user.email=t@e -c user.name=t commit -qm two"
        " && git log --oneline | wc -l",
    )
    assert details["exit_code"] == 0 and text.strip() == "2", text


def test_a_project_inside_heron_home_stays_visible_and_the_rest_of_home_hidden(
    tmp_path: Path, sandbox_ready: None
) -> None:
    home = tmp_path / "home"
    project = home / "work" / "t001"  # as heron batch puts a task's work directory
    project.mkdir(parents=True)
    (home / "work" / "t002").mkdir()
    (home / "models.json").write_text('{"providers": {}}')
    (home / "sessions").mkdir()
    tool = _tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False))
    command = (
        f"echo ok > made; cat {home}/models.json 2>/dev/null | wc -c;"
        f" ls -A {home}/sessions | wc -l; ls -A {home}/work/t002 | wc -l"
    )
    text, details = _run(tool, command)
    assert (project / "made").read_text() == "ok\n"
    (home / "sessions" / "s.jsonl").write_text("x")
    text, details = _run(tool, command)
    assert text.split() == ["0", "0", "0"], text
    assert details["sandboxed"] is True


def test_a_command_meeting_the_sandbox_edge_is_told_which(tmp_path: Path, sandbox_ready: None) -> None:
    project, home, _targets = _layout(tmp_path)
    tool = _tool(project, home, sandbox_policy([], [], project=project, home=home, trusted=False))
    text, _ = _run(tool, "echo x > /etc/heron-edge-test")
    assert "Read-only file system" in text and '"sandbox": {"writable": [PATH]}' in text
    text, _ = _run(tool, "getent hosts example.invalid.test || echo 'curl: (6) Could not resolve host: x' >&2; exit 6")
    assert "gives commands no network" in text
    text, _ = _run(tool, "exit 3")
    assert "sandbox" not in text.lower()
