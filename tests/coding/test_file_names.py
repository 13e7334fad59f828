"""Names with a newline or a byte that is not UTF-8 are listed quoted, one per line, and the
quoted form opens them (issue 24): through ls, find, grep, read and edit."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from heron.ai.abort import AbortSignal
from heron.coding.tools import create_tools
from heron.coding.tools.env import ToolEnv
from heron.coding.tools.names import quoted_name, unquote_names
from heron.coding.tools.params import EditParams, FindParams, GrepParams, LsParams, ReadParams


def _run(tools: dict[str, Any], name: str, params: Any) -> str:
    result = asyncio.run(tools[name].execute("c", params, AbortSignal(), lambda _: None))
    return "".join(getattr(block, "text", "") for block in result.content)


@pytest.fixture
def weird(tmp_path: Path) -> dict[str, Any]:
    (tmp_path / "new\nline.txt").write_text("hello one\n")
    with open(os.path.join(os.fsencode(tmp_path), b"bad\xffname.txt"), "wb") as f:
        f.write(b"hello two\n")
    (tmp_path / "it's plain.txt").write_text("hello three\n")
    return {t.name: t for t in create_tools(ToolEnv(cwd=tmp_path), ["read", "edit", "ls", "find", "grep"])}


def test_listings_show_one_quoted_line_per_name(weird: dict[str, Any]) -> None:
    expected = {"$'bad\\xffname.txt'", "$'new\\nline.txt'", "it's plain.txt"}
    assert set(_run(weird, "ls", LsParams()).splitlines()) == expected
    assert set(_run(weird, "find", FindParams(pattern="*")).splitlines()) == expected
    grep = _run(weird, "grep", GrepParams(pattern="hello"))
    assert "$'new\\nline.txt':1: hello one" in grep and "$'bad\\xffname.txt':1: hello two" in grep


def test_the_quoted_form_opens_the_file(weird: dict[str, Any], tmp_path: Path) -> None:
    assert "hello one" in _run(weird, "read", ReadParams(path="$'new\\nline.txt'"))
    assert "hello two" in _run(weird, "read", ReadParams(path="$'bad\\xffname.txt'"))
    _run(weird, "edit", EditParams(path="$'new\\nline.txt'", old_text="one", new_text="1"))
    assert (tmp_path / "new\nline.txt").read_text() == "hello 1\n"


def test_plain_names_are_left_alone() -> None:
    assert quoted_name("src/a b.py") == "src/a b.py" and unquote_names("src/a b.py") == "src/a b.py"
    assert quoted_name("tab\there") == "$'tab\\there'"
    assert unquote_names(quoted_name("$'a'")) == "$'a'"


@given(st.text(alphabet=st.characters(min_codepoint=1, max_codepoint=0x2FF, blacklist_characters="/"), min_size=1))
def test_quoting_round_trips(name: str) -> None:
    assert unquote_names(quoted_name(name)) == name
    assert "\n" not in quoted_name(name)


@given(st.binary(min_size=1, max_size=20).filter(lambda b: b"/" not in b and b"\0" not in b))
def test_any_bytes_round_trip(raw: bytes) -> None:
    name = os.fsdecode(raw)
    assert os.fsencode(unquote_names(quoted_name(name))) == raw
