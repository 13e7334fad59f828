"""grep, find and ls: exact output and notices, both backends on the same trees.

Every test that checks output runs once with rg/fd ("external") and once with the pure
Python implementation ("python"), asserting the same exact text, so the two can only
drift apart by failing here. The environment is made hermetic: HOME points into the
temp dir so a developer's global gitignore cannot change the results.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from heron.agent.tools import ToolError, ToolResult
from heron.ai.abort import AbortSignal
from heron.ai.types import TextContent
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.find import FindTool
from heron.coding.tools.globs import GlobError, compile_glob, glob_regex
from heron.coding.tools.grep import BLOCK_BYTES, GrepTool, rust_to_python
from heron.coding.tools.ignore import IGNORE, NONE, WHITELIST, IgnoreMatcher, global_excludes_path
from heron.coding.tools.listing import find_program
from heron.coding.tools.ls import LsTool
from heron.coding.tools.params import FindParams, GrepParams, LsParams
from heron.coding.tools.walker import path_key
from heron.context.tool_output.limits import ToolLimits
from heron.context.tool_output.truncate import LINE_CUT_MARKER

HAVE_RG = find_program("rg") is not None
HAVE_FD = find_program("fd", "fdfind") is not None

GREP_BACKENDS = [
    pytest.param("external", marks=pytest.mark.skipif(not HAVE_RG, reason="rg not installed")),
    "python",
]
FD_BACKENDS = [
    pytest.param("external", marks=pytest.mark.skipif(not HAVE_FD, reason="fd not installed")),
    "python",
]

Tree = dict[str, str | bytes | None]  # None: a directory


@pytest.fixture(autouse=True)
def hermetic_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "RIPGREP_CONFIG_PATH"):
        monkeypatch.delenv(name, raising=False)
    return home


def make(root: Path, tree: Tree) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, content in tree.items():
        path = root / rel
        if content is None:
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


def repo(tmp_path: Path, tree: Tree) -> Path:
    """A tree inside a git repository (an empty ``.git`` is enough for rg, fd and us)."""
    root = make(tmp_path / "repo", tree)
    (root / ".git").mkdir(exist_ok=True)
    return root


def text_of(result: ToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def call(tool: Any, params: Any, signal: AbortSignal | None = None) -> ToolResult:
    updates: list[ToolResult] = []
    return await tool.execute("call-1", params, signal or AbortSignal(), updates.append)  # type: ignore[no-any-return]


async def grep(root: Path, backend: str, limits: ToolLimits | None = None, **kwargs: Any) -> str:
    env = ToolEnv(cwd=root, limits=limits or ToolLimits())
    return text_of(await call(GrepTool(env, backend), GrepParams(**kwargs)))  # type: ignore[arg-type]


async def find(root: Path, backend: str, limits: ToolLimits | None = None, **kwargs: Any) -> str:
    env = ToolEnv(cwd=root, limits=limits or ToolLimits())
    return text_of(await call(FindTool(env, backend), FindParams(**kwargs)))  # type: ignore[arg-type]


async def ls(root: Path, backend: str, limits: ToolLimits | None = None, **kwargs: Any) -> str:
    env = ToolEnv(cwd=root, limits=limits or ToolLimits())
    return text_of(await call(LsTool(env, backend), LsParams(**kwargs)))  # type: ignore[arg-type]


async def error_of(tool: Any, params: Any) -> str:
    with pytest.raises(ToolError) as info:
        await call(tool, params)
    return str(info.value)


STANDARD: Tree = {
    ".gitignore": "*.log\nbuild/\n/top-only.txt\n!keep.log\n",
    "a.txt": "alpha needle\n",
    "a0.txt": "needle zero\n",
    "a/b.txt": "needle in a\n",
    "app.log": "needle in a log\n",
    "keep.log": "needle kept\n",
    "build/out.txt": "needle built\n",
    "top-only.txt": "needle top\n",
    "sub/top-only.txt": "needle nested top-only\n",
    "sub/.gitignore": "*.tmp\n!wanted.tmp\n",
    "sub/x.tmp": "needle tmp\n",
    "sub/wanted.tmp": "needle wanted\n",
    ".hidden/secret.txt": "needle hidden\n",
    ".env": "NEEDLE=needle\n",
    "docs/readme.md": "no match here\n",
}


# --- grep: format, order, ignore rules ----------------------------------------------


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_format_order_and_ignore_rules(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, STANDARD)
    (root / ".git" / "config").write_text("needle in .git\n")
    out = await grep(root, backend, pattern="needle")
    # depth first, names in byte order: "a/" is searched before "a.txt" and "a0.txt";
    # dotfiles included, .git never, gitignored files and directories skipped
    assert out == (
        ".env:1: NEEDLE=needle\n"
        ".hidden/secret.txt:1: needle hidden\n"
        "a/b.txt:1: needle in a\n"
        "a.txt:1: alpha needle\n"
        "a0.txt:1: needle zero\n"
        "keep.log:1: needle kept\n"
        "sub/top-only.txt:1: needle nested top-only\n"
        "sub/wanted.tmp:1: needle wanted"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_without_a_git_repository_ignores_gitignore_but_not_dot_ignore(tmp_path: Path, backend: str) -> None:
    root = make(
        tmp_path / "plain", {".gitignore": "*.log\n", ".ignore": "skip.txt\n", "a.log": "x\n", "skip.txt": "x\n"}
    )
    # like git, rg and fd: .gitignore means nothing outside a repository; .ignore always applies
    assert await grep(root, backend, pattern="^x$") == "a.log:1: x"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_ignore_file_precedence_and_exclude(tmp_path: Path, backend: str) -> None:
    root = repo(
        tmp_path,
        {
            ".ignore": "a.txt\n",
            ".rgignore": "c.txt\n",
            ".fdignore": "b.txt\n",  # find's file, not grep's
            "a.txt": "hit\n",
            "b.txt": "hit\n",
            "c.txt": "hit\n",
            "d.txt": "hit\n",
            "e.txt": "hit\n",
            "sub/.gitignore": "!a.txt\n",  # .ignore outranks .gitignore at any depth
            "sub/a.txt": "hit\n",
            "sub/e.txt": "hit\n",
        },
    )
    (root / ".git" / "info").mkdir()
    (root / ".git" / "info" / "exclude").write_text("e.txt\n")
    assert await grep(root, backend, pattern="hit") == "b.txt:1: hit\nd.txt:1: hit"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_global_excludes_file(tmp_path: Path, backend: str, hermetic_home: Path) -> None:
    root = repo(tmp_path, {"a.txt": "hit\n", "b.swp": "hit\n", "c.bak": "hit\n"})
    make(hermetic_home, {".config/git/ignore": "*.swp\n"})
    assert await grep(root, backend, pattern="hit") == "a.txt:1: hit\nc.bak:1: hit"
    # core.excludesFile in ~/.gitconfig wins over the default location
    make(hermetic_home, {".gitconfig": "[core]\n\texcludesFile = ~/my-ignore\n", "my-ignore": "*.bak\n"})
    assert await grep(root, backend, pattern="hit") == "a.txt:1: hit\nb.swp:1: hit"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_glob_parameter(tmp_path: Path, backend: str) -> None:
    root = repo(
        tmp_path,
        {
            ".gitignore": "*.gen.ts\nvendor/\n",
            "a.py": "hit\n",
            "src/b.ts": "hit\n",
            "src/c.tsx": "hit\n",
            "src/deep/d.ts": "hit\n",
            "src/e.gen.ts": "hit\n",
            "vendor/f.ts": "hit\n",
            "README.md": "hit\n",
        },
    )
    assert await grep(root, backend, pattern="hit", glob="*.{ts,tsx}") == (
        # a gitignored file matching the glob is searched (rg's rule); an ignored dir is not
        "src/b.ts:1: hit\nsrc/c.tsx:1: hit\nsrc/deep/d.ts:1: hit\nsrc/e.gen.ts:1: hit"
    )
    assert await grep(root, backend, pattern="hit", glob="src/*.ts") == "src/b.ts:1: hit\nsrc/e.gen.ts:1: hit"
    assert await grep(root, backend, pattern="hit", glob="src/**/*.ts") == (
        "src/b.ts:1: hit\nsrc/deep/d.ts:1: hit\nsrc/e.gen.ts:1: hit"
    )
    assert await grep(root, backend, pattern="hit", glob="!*.ts") == ("README.md:1: hit\na.py:1: hit\nsrc/c.tsx:1: hit")


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_ignore_case_and_literal(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "Hello\nhello\nHELLO\nprice: $1.50 (x)\nprice: 1150\n"})
    assert await grep(root, backend, pattern="hello", ignore_case=True) == (
        "a.txt:1: Hello\na.txt:2: hello\na.txt:3: HELLO"
    )
    assert await grep(root, backend, pattern="$1.50 (x)", literal=True) == "a.txt:4: price: $1.50 (x)"
    assert await grep(root, backend, pattern="1.50") == "a.txt:4: price: $1.50 (x)\na.txt:5: price: 1150"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_context_lines_and_separators(tmp_path: Path, backend: str) -> None:
    root = repo(
        tmp_path,
        {
            "a.txt": "".join(f"line {n}{' match' if n in (2, 4, 10) else ''}\n" for n in range(1, 13)),
            "b.txt": "match first\nsecond\n",
        },
    )
    assert await grep(root, backend, pattern="match", context=1) == (
        "a.txt-1- line 1\n"
        "a.txt:2: line 2 match\n"
        "a.txt-3- line 3\n"
        "a.txt:4: line 4 match\n"
        "a.txt-5- line 5\n"
        "--\n"
        "a.txt-9- line 9\n"
        "a.txt:10: line 10 match\n"
        "a.txt-11- line 11\n"
        "--\n"
        "b.txt:1: match first\n"
        "b.txt-2- second"
    )


# --- grep: limits and notices ------------------------------------------------------------


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_default_match_limit_notice(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"many.txt": "".join(f"hit {n}\n" for n in range(1, 151))})
    out = await grep(root, backend, pattern="hit")
    lines = out.split("\n")
    assert lines[:100] == [f"many.txt:{n}: hit {n}" for n in range(1, 101)]
    assert lines[100:] == ["", "[100 matches limit reached. Use limit=200 for more, or refine the pattern.]"]


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_custom_limit_across_files_and_exact_limit(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "hit\nhit\n", "b.txt": "hit\nhit\n", "c.txt": "hit\n"})
    assert await grep(root, backend, pattern="hit", limit=3) == (
        "a.txt:1: hit\na.txt:2: hit\nb.txt:1: hit\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine the pattern.]"
    )
    # exactly `limit` matches: nothing was left out, so no notice
    assert await grep(root, backend, pattern="hit", limit=5) == (
        "a.txt:1: hit\na.txt:2: hit\nb.txt:1: hit\nb.txt:2: hit\nc.txt:1: hit"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_limit_keeps_after_context_of_last_match_only(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "m\nx1\nx2\nx3\nx4\nm\nx5\n", "b.txt": "y\nm\n"})
    assert await grep(root, backend, pattern="^m$", context=2, limit=1) == (
        "a.txt:1: m\na.txt-2- x1\na.txt-3- x2\n\n"
        "[1 matches limit reached. Use limit=2 for more, or refine the pattern.]"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_ten_megabyte_single_line(tmp_path: Path, backend: str) -> None:
    line = "ab" * (5 * 1024 * 1024) + " needle"
    root = repo(tmp_path, {"big.min.js": line, "small.txt": "needle\n"})
    out = await grep(root, backend, pattern="needle")
    assert out == (
        f"big.min.js:1: {'ab' * 250}{LINE_CUT_MARKER}\n"
        "small.txt:1: needle\n\n"
        "[Some lines were cut at 500 characters. Use read to see them in full.]"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_line_and_byte_caps(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"f.txt": "xxxxxxxxxx\n" * 50})
    out = await grep(root, backend, ToolLimits(max_lines=5), pattern="x")
    assert out == (
        "".join(f"f.txt:{n}: xxxxxxxxxx\n" for n in range(1, 6))
        + "\n[Output truncated at the 5-line limit: showing 5 of 50 lines. "
        "Refine the pattern, or use a smaller limit or context.]"
    )
    # "f.txt:1: xxxxxxxxxx" is 19 bytes: five lines and four newlines fill 99 of 100
    out = await grep(root, backend, ToolLimits(max_bytes=100), pattern="x")
    assert out == (
        "".join(f"f.txt:{n}: xxxxxxxxxx\n" for n in range(1, 6))
        + "\n[Output truncated at the 100B limit: showing 5 of 50 lines. "
        "Refine the pattern, or use a smaller limit or context.]"
    )
    # with a limit notice too, the truncation notice comes first
    out = await grep(root, backend, ToolLimits(max_lines=2, grep_matches=3), pattern="x")
    assert out == (
        "f.txt:1: xxxxxxxxxx\nf.txt:2: xxxxxxxxxx\n\n"
        "[Output truncated at the 2-line limit: showing 2 of 3 lines. "
        "Refine the pattern, or use a smaller limit or context.]\n"
        "[3 matches limit reached. Use limit=6 for more, or refine the pattern.]"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_no_matches(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "nothing\n", "empty.txt": ""})
    assert await grep(root, backend, pattern="needle") == "No matches found"
    assert await grep(root, backend, pattern="^$") == "No matches found"


# --- grep: bad input ----------------------------------------------------------------------


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_invalid_regex(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "x\n"})
    tool = GrepTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    message = await error_of(tool, GrepParams(pattern="foo("))
    assert message.startswith("Invalid regex pattern: foo(: ")
    assert len(message) > len("Invalid regex pattern: foo(: ")
    # a line break can never match a line; same message from both backends
    assert await error_of(tool, GrepParams(pattern="a\\nb")) == (
        "Invalid regex pattern: a\\nb: a pattern cannot match a line break; search for one line at a time"
    )
    # an escaped backslash before n is fine
    assert text_of(await call(tool, GrepParams(pattern="a\\\\nb"))) == "No matches found"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_invalid_glob(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "x\n"})
    tool = GrepTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    assert await error_of(tool, GrepParams(pattern="x", glob="*.{ts,tsx")) == (
        "Invalid glob pattern: *.{ts,tsx: unclosed alternate group; missing '}' (escape '{' as '[{]')"
    )
    assert await error_of(tool, GrepParams(pattern="x", glob="[z-a].py")) == (
        "Invalid glob pattern: [z-a].py: invalid range; 'z' > 'a'"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_missing_path_and_single_file(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {".gitignore": "*.log\n", "dir/app.log": "needle\nother\nneedle again\n"})
    tool = GrepTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    assert await error_of(tool, GrepParams(pattern="x", path="nope")) == "Path not found: nope"
    # a file given by name is searched even though it is gitignored
    assert await grep(root, backend, pattern="needle", path="dir/app.log") == (
        "dir/app.log:1: needle\ndir/app.log:3: needle again"
    )
    assert await grep(root, backend, pattern="needle", path="@dir/app.log", glob="*.py") == (
        "dir/app.log:1: needle\ndir/app.log:3: needle again"
    )


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_paths_relative_to_cwd_or_absolute(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"pkg/mod/a.py": "needle\n"})
    assert await grep(root, backend, pattern="needle", path="pkg") == "pkg/mod/a.py:1: needle"
    cwd = root / "pkg" / "mod"
    env = ToolEnv(cwd=cwd)
    out = text_of(await call(GrepTool(env, backend), GrepParams(pattern="needle", path=str(root))))  # type: ignore[arg-type]
    assert out == f"{root}/pkg/mod/a.py:1: needle"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_skips_binary_files(tmp_path: Path, backend: str) -> None:
    late_nul = b"needle before the NUL\n" + b"filler line\n" * 200_000 + b"\0\n"  # NUL past the first block
    root = repo(
        tmp_path,
        {
            "image.png": b"\x89PNG\r\n\x1a\n\0\0needle\n",
            "late.bin": late_nul,
            "text.txt": "needle\n",
        },
    )
    assert len(late_nul) > BLOCK_BYTES
    assert await grep(root, backend, pattern="needle") == "text.txt:1: needle"
    assert await grep(root, backend, pattern="needle", path="late.bin") == "No matches found"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_unicode_encodings_and_line_endings(tmp_path: Path, backend: str) -> None:
    root = repo(
        tmp_path,
        {
            "bom.txt": b"\xef\xbb\xbfcaf\xc3\xa9 with BOM\n",
            "crlf.txt": b"first caf\xc3\xa9\r\nsecond\r\n",
            "cjk.txt": "日本語のテキスト café\n",
            "latin1.txt": b"caf\xe9 latin1 CAF\xc3\x89\n",
            "utf16.txt": "utf16 café\n".encode("utf-16"),
        },
    )
    assert await grep(root, backend, pattern="café|CAFÉ") == (
        "bom.txt:1: café with BOM\n"
        "cjk.txt:1: 日本語のテキスト café\n"
        "crlf.txt:1: first café\n"
        "latin1.txt:1: caf\ufffd latin1 CAFÉ\n"
        "utf16.txt:1: utf16 café"
    )
    assert await grep(root, backend, pattern="CAFÉ", ignore_case=True) == (
        "bom.txt:1: café with BOM\n"
        "cjk.txt:1: 日本語のテキスト café\n"
        "crlf.txt:1: first café\n"
        "latin1.txt:1: caf\ufffd latin1 CAFÉ\n"
        "utf16.txt:1: utf16 café"
    )
    # as with rg (no --crlf): the \r is part of the line for matching, so $ does not match before it
    assert await grep(root, backend, pattern="second$") == "No matches found"
    assert await grep(root, backend, pattern="second\r?$") == "crlf.txt:2: second"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_rust_regex_spellings(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "id 42\nword\nswordfish\n"})
    assert await grep(root, backend, pattern="[[:digit:]]+") == "a.txt:1: id 42"
    assert await grep(root, backend, pattern="\\bword\\b") == "a.txt:2: word"
    assert await grep(root, backend, pattern="fish\\z") == "a.txt:3: swordfish"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_does_not_follow_symlinks(tmp_path: Path, backend: str) -> None:
    outside = make(tmp_path / "outside", {"o.txt": "needle\n"})
    root = repo(tmp_path, {"real.txt": "needle\n"})
    (root / "link.txt").symlink_to(root / "real.txt")
    (root / "linkdir").symlink_to(outside, target_is_directory=True)
    assert await grep(root, backend, pattern="needle") == "real.txt:1: needle"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_aborted(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "needle\n"})
    signal = AbortSignal()
    signal.abort()
    with pytest.raises(ToolError, match=r"^grep was aborted\.$"):
        await call(GrepTool(ToolEnv(cwd=root), backend), GrepParams(pattern="needle"), signal)  # type: ignore[arg-type]


# --- grep: the two backends agree ---------------------------------------------------------


@pytest.mark.skipif(not HAVE_RG, reason="rg not installed")
@pytest.mark.parametrize("context", [0, 2])
async def test_grep_backends_agree_on_large_files_across_blocks(tmp_path: Path, context: int) -> None:
    lines = [f"line {n} {'needle' if n % 9973 in (0, 1, 5) else 'hay'}" for n in range(1, 160_001)]
    root = repo(tmp_path, {"big.txt": "\n".join(lines) + "\n", "tail.txt": "\n".join(lines[:50])})
    assert (root / "big.txt").stat().st_size > 2 * BLOCK_BYTES
    for pattern in ("needle", "^line 1\\d* needle$", "9 hay$"):
        python = await grep(root, "python", pattern=pattern, context=context, limit=100_000)
        external = await grep(root, "external", pattern=pattern, context=context, limit=100_000)
        assert python == external


def random_tree(rng: random.Random) -> Tree:
    words = ["alpha", "beta", "gamma", "delta", "Alpha", "ünï", "x_1", "foo.bar", "  indent", ""]
    names = ["a", "b", "a.txt", "a0", "B.md", ".h", "z.log", "c.py", "tmp", "é.txt"]
    tree: Tree = {}
    for _ in range(25):
        rel = "/".join(rng.choice(names) for _ in range(rng.randint(1, 3)))
        if rel in tree or any(rel.startswith(other + "/") or other.startswith(rel + "/") for other in tree):
            continue
        tree[rel] = "\n".join(rng.choice(words) for _ in range(rng.randint(0, 8))) + rng.choice(["", "\n"])
    rules = ["*.log", "tmp/", "!b", "a/b", "/a0", "**/c.py", "*.md", "!z.log", "B*", "a/**", "[ab].txt"]
    tree[".gitignore"] = "\n".join(rng.sample(rules, 3)) + "\n"
    if rng.random() < 0.5:
        tree[".ignore"] = rng.choice(rules) + "\n"
    return tree


@pytest.mark.skipif(not HAVE_RG, reason="rg not installed")
async def test_grep_backends_agree_on_random_trees(tmp_path: Path) -> None:
    rng = random.Random(5)
    patterns = [
        ("alpha", {}),
        ("alpha", {"ignore_case": True}),
        ("^\\s+\\w+", {}),
        ("a|delta$", {"context": 1}),
        ("foo.bar", {"literal": True}),
        ("ünï", {"glob": "*.txt"}),
        ("a", {"glob": "a/**"}),
        ("", {"limit": 7}),
    ]
    for trial in range(12):
        tree = random_tree(rng)
        root = repo(tmp_path / f"t{trial}", tree)
        for pattern, extra in patterns:
            python = await grep(root, "python", pattern=pattern, **extra)
            external = await grep(root, "external", pattern=pattern, **extra)
            assert python == external, (trial, pattern, extra, tree)


@pytest.mark.skipif(not HAVE_FD, reason="fd not installed")
async def test_find_and_ls_backends_agree_on_random_trees(tmp_path: Path) -> None:
    rng = random.Random(11)
    for trial in range(12):
        tree = random_tree(rng)
        root = repo(tmp_path / f"t{trial}", tree)
        for pattern in ("*", "*.txt", "a/**", "**/b", "{a,b}*", "?.*", "a/*/*"):
            python = await find(root, "python", pattern=pattern)
            external = await find(root, "external", pattern=pattern)
            assert python == external, (trial, pattern, tree)
        for directory in sorted({str(Path(rel).parent) for rel in tree}):
            python = await ls(root, "python", path=directory)
            external = await ls(root, "external", path=directory)
            assert python == external, (trial, directory, tree)


# --- find ---------------------------------------------------------------------------------


FIND_TREE: Tree = {
    ".gitignore": "dist/\n*.pyc\n",
    "setup.py": "",
    "a.py": "",
    "a/b.py": "",
    "a0.py": "",
    "src/main.py": "",
    "src/util/helpers.py": "",
    "src/util/helpers.pyc": "",
    "src/app.ts": "",
    "src/view.tsx": "",
    "tests/test_main.py": "",
    "tests/unit/test_util.py": "",
    "dist/bundle.py": "",
    ".github/workflows/ci.yml": "",
    "pkg.py/inner.txt": "",  # a directory whose name matches *.py is not listed
    "Upper.PY": "",
}


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_name_globs(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, FIND_TREE)
    assert await find(root, backend, pattern="*.py") == (
        "a/b.py\na.py\na0.py\nsetup.py\nsrc/main.py\nsrc/util/helpers.py\ntests/test_main.py\ntests/unit/test_util.py"
    )
    assert await find(root, backend, pattern="*.{ts,tsx}") == "src/app.ts\nsrc/view.tsx"
    assert await find(root, backend, pattern="test_u???.py") == "tests/unit/test_util.py"
    assert await find(root, backend, pattern="*.yml") == ".github/workflows/ci.yml"
    assert await find(root, backend, pattern="*.PY") == "Upper.PY"


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_path_globs(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, FIND_TREE)
    assert await find(root, backend, pattern="src/*.py") == "src/main.py"
    assert await find(root, backend, pattern="src/**/*.py") == "src/main.py\nsrc/util/helpers.py"
    assert await find(root, backend, pattern="**/test_*.py") == "tests/test_main.py\ntests/unit/test_util.py"
    assert await find(root, backend, pattern="./src/*.ts") == "src/app.ts"
    assert await find(root, backend, pattern="/a/*.py") == "a/b.py"
    assert await find(root, backend, pattern=f"{root}/tests/*.py") == "tests/test_main.py"
    assert await find(root, backend, pattern="src/**") == ("src/app.ts\nsrc/main.py\nsrc/util/helpers.py\nsrc/view.tsx")
    assert await find(root, backend, pattern="*.py", path="src") == "src/main.py\nsrc/util/helpers.py"


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_limit_notice(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {f"d{n // 100}/f{n:04d}.txt": "" for n in range(1001)})
    out = await find(root, backend, pattern="*.txt")
    lines = out.split("\n")
    assert lines[:1000] == sorted(lines[:1000], key=path_key)
    assert lines[999] == "d9/f0998.txt"  # d10/ sorts before d2/
    assert lines[1000:] == ["", "[1000 results limit reached. Use limit=2000 for more, or refine the pattern.]"]
    assert await find(root, backend, pattern="f000?.txt", limit=3) == (
        "d0/f0000.txt\nd0/f0001.txt\nd0/f0002.txt\n\n"
        "[3 results limit reached. Use limit=6 for more, or refine the pattern.]"
    )
    assert await find(root, backend, pattern="*.txt", limit=2000) == "\n".join([*lines[:1000], "d9/f0999.txt"])


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_byte_cap(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {f"file{n:02d}.txt": "" for n in range(30)})
    # "file00.txt" is 10 bytes: four paths and three newlines are 43 bytes
    assert await find(root, backend, ToolLimits(max_bytes=50), pattern="*.txt") == (
        "file00.txt\nfile01.txt\nfile02.txt\nfile03.txt\n\n"
        "[Output truncated at the 50B limit: showing 4 of 30 lines. Refine the pattern or use a smaller limit.]"
    )


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_no_results_and_bad_input(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {"a.txt": "", "dir/b.txt": ""})
    tool = FindTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    assert await find(root, backend, pattern="*.rs") == "No files found matching pattern"
    assert await find(root, backend, pattern="dir") == "No files found matching pattern"  # files only
    assert await error_of(tool, FindParams(pattern="[abc")) == (
        "Invalid glob pattern: [abc: unclosed character class; missing ']'"
    )
    assert await error_of(tool, FindParams(pattern="*.txt", path="missing/dir")) == "Path not found: missing/dir"
    assert await error_of(tool, FindParams(pattern="*.txt", path="a.txt")) == (
        "a.txt is a file, not a directory. find searches the files below a directory."
    )


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_unicode_symlinks_and_no_repository(tmp_path: Path, backend: str) -> None:
    root = make(tmp_path / "plain", {".gitignore": "*.txt\n", "naïve.txt": "", "日本/語.txt": "", "b.md": ""})
    (root / "link.txt").symlink_to(root / "naïve.txt")
    # not a repository: the .gitignore does not apply; the symlink is not listed
    assert await find(root, backend, pattern="*.txt") == "naïve.txt\n日本/語.txt"


# --- ls -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_ls_entries_and_ignored_notice(tmp_path: Path, backend: str) -> None:
    root = repo(
        tmp_path,
        {
            ".gitignore": "node_modules/\n*.log\n",
            ".env": "",
            "README.md": "",
            "src": None,
            "a.log": "",
            "node_modules/x/index.js": "",
            "zeta.txt": "",
        },
    )
    (root / "link").symlink_to(root / "src", target_is_directory=True)
    assert await ls(root, backend) == (
        ".env\n.gitignore\nREADME.md\nlink@\nsrc/\nzeta.txt\n\n[2 gitignored entries not shown]"
    )
    assert await ls(root, backend, path="src") == "(empty directory)"
    (root / "src" / "only.log").write_text("")
    assert await ls(root, backend, path="src") == "(no entries shown)\n\n[1 gitignored entry not shown]"


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_ls_limit_and_caps(tmp_path: Path, backend: str) -> None:
    root = make(tmp_path / "plain", {f"f{n:03d}": "" for n in range(501)})
    out = await ls(root, backend)
    assert out.split("\n")[-2:] == ["", "[500 entries limit reached. Use limit=1000 for more.]"]
    assert out.split("\n")[499] == "f499"
    assert await ls(root, backend, limit=2) == "f000\nf001\n\n[2 entries limit reached. Use limit=4 for more.]"
    assert await ls(root, backend, ToolLimits(max_lines=3)) == (
        "f000\nf001\nf002\n\n"
        "[Output truncated at the 3-line limit: showing 3 of 500 lines. Use a smaller limit.]\n"
        "[500 entries limit reached. Use limit=1000 for more.]"
    )


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_ls_bad_input(tmp_path: Path, backend: str) -> None:
    root = make(tmp_path / "plain", {"file.txt": "x", "locked/inner": ""})
    tool = LsTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    assert await error_of(tool, LsParams(path="file.txt")) == (
        "file.txt is a file, not a directory. Use read to see its contents."
    )
    assert await error_of(tool, LsParams(path="nope")) == "Path not found: nope"
    if os.geteuid() != 0:  # root reads anything
        (root / "locked").chmod(0)
        try:
            assert await error_of(tool, LsParams(path="locked")) == "Permission denied: locked"
        finally:
            (root / "locked").chmod(0o755)


async def test_auto_backend_prefers_installed_programs(tmp_path: Path) -> None:
    root = repo(tmp_path, {"a.txt": "x\n"})
    env = ToolEnv(cwd=root)
    grep_result = await call(GrepTool(env), GrepParams(pattern="x"))
    find_result = await call(FindTool(env), FindParams(pattern="*"))
    ls_result = await call(LsTool(env), LsParams())
    assert grep_result.details["backend"] == ("rg" if HAVE_RG else "python")
    assert find_result.details["backend"] == ("fd" if HAVE_FD else "python")
    assert ls_result.details["backend"] == ("fd" if HAVE_FD else "python")


# --- all three: repositories above and below the search path -------------------------------


@pytest.mark.parametrize("backend", ["external", "python"])
async def test_parent_and_nested_repositories(tmp_path: Path, backend: str) -> None:
    if backend == "external" and not (HAVE_RG and HAVE_FD):
        pytest.skip("rg or fd not installed")
    outer = repo(
        tmp_path,
        {
            ".gitignore": "*.txt\n",
            "sub/a.txt": "hit\n",
            "sub/a.md": "hit\n",
            "inner/b.txt": "hit\n",
            "inner/b.md": "hit\n",
        },
    )
    (outer / "inner" / ".git").mkdir()
    env = ToolEnv(cwd=outer)
    # searching a subdirectory still honours the repository's .gitignore above it ...
    assert await grep(outer, backend, pattern="hit", path="sub") == "sub/a.md:1: hit"
    assert await find(outer, backend, pattern="*", path="sub") == "sub/a.md"
    assert await ls(outer, backend, path="sub") == "a.md\n\n[1 gitignored entry not shown]"
    # ... but not inside a nested repository, which has its own rules (git, rg and fd agree)
    assert await grep(outer, backend, pattern="hit", path="inner") == "inner/b.md:1: hit\ninner/b.txt:1: hit"
    assert await grep(outer, backend, pattern="hit") == ("inner/b.md:1: hit\ninner/b.txt:1: hit\nsub/a.md:1: hit")
    assert await find(outer, backend, pattern="b.*") == "inner/b.md\ninner/b.txt"
    del env


@pytest.mark.parametrize("backend", ["external", "python"])
async def test_glob_characters_in_the_searched_path(tmp_path: Path, backend: str) -> None:
    if backend == "external" and not (HAVE_RG and HAVE_FD):
        pytest.skip("rg or fd not installed")
    root = make(tmp_path / "we[ir]d {dir}*?", {"src/a.py": "hit\n", "src/b/c.py": "hit\n", "x.py": "hit\n"})
    assert await find(root, backend, pattern="src/*.py") == "src/a.py"
    assert await find(root, backend, pattern="**/*.py") == "src/a.py\nsrc/b/c.py\nx.py"
    assert await grep(root, backend, pattern="hit", glob="src/**") == "src/a.py:1: hit\nsrc/b/c.py:1: hit"


@pytest.mark.parametrize("backend", GREP_BACKENDS)
async def test_grep_refuses_a_pipe(tmp_path: Path, backend: str) -> None:
    root = make(tmp_path / "plain", {"a.txt": "hit\n"})
    os.mkfifo(root / "pipe")
    tool = GrepTool(ToolEnv(cwd=root), backend)  # type: ignore[arg-type]
    assert await error_of(tool, GrepParams(pattern="hit", path="pipe")) == (
        "pipe is not a regular file (a device, socket or pipe), so it was not searched."
    )
    assert await grep(root, backend, pattern="hit") == "a.txt:1: hit"  # a pipe in the tree is skipped


@pytest.mark.parametrize("backend", FD_BACKENDS)
async def test_find_and_ls_use_fdignore_not_rgignore(tmp_path: Path, backend: str) -> None:
    root = repo(tmp_path, {".fdignore": "a.txt\n", ".rgignore": "b.txt\n", "a.txt": "", "b.txt": ""})
    assert await find(root, backend, pattern="*.txt") == "b.txt"
    assert await ls(root, backend) == ".fdignore\n.rgignore\nb.txt\n\n[1 gitignored entry not shown]"


# --- the building blocks --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("glob", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "dir/a.py", False),  # a bare glob is matched against names by the callers
        ("**/*.py", "dir/sub/a.py", True),
        ("**/*.py", "a.py", True),
        ("src/**/x", "src/x", True),
        ("src/**/x", "src/a/b/x", True),
        ("src/**", "src/a/b", True),
        ("src/**", "src", False),
        ("*.{ts,tsx}", "a.tsx", True),
        ("*.{ts,tsx}", "a.js", False),
        ("[!a]b", "cb", True),
        ("[!a]b", "ab", False),
        ("[a-c]?", "bz", True),
        ("\\*", "*", True),
        ("a**b", "axxb", True),  # ** inside a component is a plain *
        ("a**b", "ax/b", False),
        ("[]]", "]", True),
        ("[a-]", "-", True),
        # globs match bytes, as in rg and fd: ? is one byte, so it does not match "é"
        ("?.txt", "é.txt", False),
        ("??.txt", "é.txt", True),
        ("é*", "été", True),
    ],
)
def test_glob_regex(glob: str, path: str, matches: bool) -> None:
    assert (compile_glob(glob).fullmatch(path.encode()) is not None) is matches


@pytest.mark.parametrize(
    ("glob", "reason"),
    [
        ("[abc", "unclosed character class; missing ']'"),
        ("{a,b", "unclosed alternate group; missing '}' (escape '{' as '[{]')"),
        ("a}", "unopened alternate group; missing '{' (escape '}' as '[}]')"),
        ("[z-a]", "invalid range; 'z' > 'a'"),
        ("x\\", "dangling '\\'"),
    ],
)
def test_glob_errors(glob: str, reason: str) -> None:
    with pytest.raises(GlobError) as info:
        glob_regex(glob)
    assert str(info.value) == reason


@pytest.mark.parametrize(
    ("lines", "path", "is_dir", "verdict"),
    [
        ("*.log", "deep/x.log", False, IGNORE),
        ("/top.txt", "sub/top.txt", False, NONE),
        ("/top.txt", "top.txt", False, IGNORE),
        ("build/", "build", False, NONE),  # only directories
        ("build/", "a/build", True, IGNORE),
        ("*.log\n!keep.log", "keep.log", False, WHITELIST),
        ("!keep.log\n*.log", "keep.log", False, IGNORE),  # the last matching line decides
        ("*\n!*/\n!*.py", "src/x.txt", False, IGNORE),  # a directory rule does not re-include files
        ("*\n!*/\n!*.py", "src", True, WHITELIST),
        ("# comment\n\\#hash", "#hash", False, IGNORE),
        ("trailing   ", "trailing", False, IGNORE),
        ("escaped\\ ", "escaped ", False, IGNORE),
        ("[unclosed", "[unclosed", False, IGNORE),  # in ignore files an unclosed [ is literal
        ("abc/**", "abc", True, NONE),
        ("abc/**", "abc/x/y", False, IGNORE),
        ("a/**/b", "a/b", False, IGNORE),
        ("\ufeff*.bom\r\n", "x.bom", False, IGNORE),
    ],
)
def test_ignore_matcher(lines: str, path: str, is_dir: bool, verdict: int) -> None:
    matcher = IgnoreMatcher.from_text(lines)
    assert matcher is not None
    assert matcher.match(path.encode(), is_dir) == verdict


def test_global_excludes_path(hermetic_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert global_excludes_path() == str(hermetic_home / ".config" / "git" / "ignore")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(hermetic_home / "xdg"))
    assert global_excludes_path() == str(hermetic_home / "xdg" / "git" / "ignore")
    make(hermetic_home, {"xdg/git/config": '[core]\n  excludesfile = "~/from-xdg"\n'})
    assert global_excludes_path() == str(hermetic_home / "from-xdg")
    make(hermetic_home, {".gitconfig": "[core]\nexcludesFile=/etc/ignore-all\n"})
    assert global_excludes_path() == "/etc/ignore-all"


def test_rust_to_python() -> None:
    assert rust_to_python("(?<year>\\d{4})") == "(?P<year>\\d{4})"
    assert rust_to_python("(?<=a)b") == "(?<=a)b"
    assert rust_to_python("[[:alpha:]_][[:word:]]*") == "[A-Za-z_][0-9A-Za-z_]*"
    assert rust_to_python("end\\z") == "end\\Z"
    assert rust_to_python("[]x]") == "[\\]x]"
