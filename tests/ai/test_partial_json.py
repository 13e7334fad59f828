"""Property tests: arguments parsed from any prefix never crash and never contradict the end."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from heron.ai.partial_json import parse_final, parse_partial

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=10), values, max_size=5)


def consistent(partial: Any, final: Any) -> bool:
    """A partial value never says something the final value contradicts."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(k in final and consistent(v, final[k]) for k, v in partial.items())
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(consistent(p, f) for p, f in zip(partial, final, strict=False))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return True  # numbers may be cut mid-digit; they are settled by the final parse


@settings(max_examples=300, deadline=None)
@given(objects, st.booleans(), st.data())
def test_every_prefix_parses_consistently(obj: dict[str, Any], ascii_only: bool, data: st.DataObject) -> None:
    text = json.dumps(obj, ensure_ascii=ascii_only)
    cut = data.draw(st.integers(min_value=0, max_value=len(text)))
    partial = parse_partial(text[:cut])
    if partial is not None:
        assert consistent(partial, obj)
    final, valid = parse_final(text)
    assert valid and final == obj


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_arbitrary_text_never_raises(text: str) -> None:
    parse_partial(text)
    arguments, valid = parse_final(text)
    assert isinstance(arguments, dict)
    if not valid:
        assert arguments == {}


def test_examples() -> None:
    assert parse_partial('{"path": "src/ma') == {"path": "src/ma"}
    assert parse_partial('{"a": [1, 2') == {"a": [1, 2]}
    assert parse_partial("") == {}
    assert parse_final("") == ({}, True)
    assert parse_final("[1, 2]") == ({}, False)
    assert parse_final('{"a": 1') == ({}, False)
    assert parse_final('{"a": 1}') == ({"a": 1}, True)
