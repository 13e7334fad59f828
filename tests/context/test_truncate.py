"""Head/tail truncation: limits are never exceeded, characters never split, counts exact."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from heron.context.tool_output.truncate import (
    LINE_CUT_MARKER,
    cut_line,
    head_bytes,
    split_lines,
    tail_bytes,
    truncate_head,
    truncate_tail,
)

# Lines mixing ASCII with 2-, 3- and 4-byte characters, so byte limits fall inside them.
_chars = st.sampled_from([*"ab \t\r{}", "é", "ß", "€", "中", "😀", "𝄞"])
_line = st.text(alphabet=_chars, max_size=40)
_text = st.builds(
    lambda lines, trailing: "\n".join(lines) + ("\n" if trailing and lines else ""),
    st.lists(_line, max_size=30),
    st.booleans(),
)
_max_lines = st.integers(min_value=1, max_value=40)
_max_bytes = st.integers(min_value=1, max_value=400)


def _b(text: str) -> int:
    return len(text.encode("utf-8"))


def _clean(text: str) -> bool:
    """Encodes and decodes losslessly: no half character, no replacement character added."""
    return text.encode("utf-8").decode("utf-8") == text and "\ufffd" not in text


@settings(max_examples=400, deadline=None)
@given(_text, _max_lines, _max_bytes)
def test_truncate_head_respects_limits_and_keeps_a_line_prefix(text: str, max_lines: int, max_bytes: int) -> None:
    t = truncate_head(text, max_lines, max_bytes)
    lines = split_lines(text) if text else []
    assert t.total_lines == len(lines)
    assert t.total_bytes == _b(text)
    assert t.output_bytes == _b(t.content)
    assert _clean(t.content)
    if not t.truncated:
        # everything, possibly without the final newline when only that was over the limit
        assert t.content in (text, text.removesuffix("\n"))
        assert t.truncated_by is None
        assert t.total_lines <= max_lines and t.output_bytes <= max_bytes
        assert t.output_lines == t.total_lines
        return
    assert t.output_lines <= max_lines
    assert t.output_bytes <= max_bytes
    assert t.content == "\n".join(lines[: t.output_lines])
    assert text.startswith(t.content)
    assert t.output_lines < t.total_lines
    # the next line is the one that did not fit
    nxt = lines[t.output_lines]
    if t.truncated_by == "lines":
        assert t.output_lines == max_lines
    else:
        assert t.truncated_by == "bytes"
        assert t.output_bytes + _b(nxt) + (1 if t.output_lines else 0) > max_bytes
    assert t.first_line_exceeds_limit == (t.output_lines == 0)
    assert not t.last_line_partial


@settings(max_examples=400, deadline=None)
@given(_text, _max_lines, _max_bytes)
def test_truncate_tail_respects_limits_and_keeps_a_suffix(text: str, max_lines: int, max_bytes: int) -> None:
    t = truncate_tail(text, max_lines, max_bytes)
    lines = split_lines(text) if text else []
    assert t.total_lines == len(lines)
    assert t.total_bytes == _b(text)
    assert t.output_bytes == _b(t.content)
    assert _clean(t.content)
    if not t.truncated:
        assert t.content in (text, text.removesuffix("\n"))
        assert t.truncated_by is None
        assert t.total_lines <= max_lines and t.output_bytes <= max_bytes
        assert t.output_lines == t.total_lines
        return
    assert t.output_lines <= max_lines
    assert t.output_bytes <= max_bytes
    # a suffix of the text, ignoring the trailing newline that split_lines drops
    body = text[:-1] if text.endswith("\n") else text
    assert body.endswith(t.content)
    if t.last_line_partial:
        # only the end of the last line, cut on a character boundary
        assert t.output_lines == 1
        assert lines[-1].endswith(t.content)
        assert _b(lines[-1]) > max_bytes
        assert t.truncated_by == "bytes"
    else:
        expected = "\n".join(lines[len(lines) - t.output_lines :]) if t.output_lines else ""
        assert t.content == expected
        if t.output_lines < len(lines):
            # whole lines: the kept part starts right after a newline
            assert body[: len(body) - len(t.content)].endswith("\n")
        if t.truncated_by == "lines":
            assert t.output_lines == max_lines


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_chars, max_size=60), st.integers(min_value=0, max_value=120))
def test_head_and_tail_bytes_cut_on_character_boundaries(text: str, limit: int) -> None:
    head = head_bytes(text, limit)
    tail = tail_bytes(text, limit)
    assert _b(head) <= limit or head == text
    assert _b(tail) <= limit or tail == text
    assert text.startswith(head) and text.endswith(tail)
    assert _clean(head) and _clean(tail)
    # nothing more could have been kept without splitting a character
    if head != text:
        assert _b(text[: len(head) + 1]) > limit
    if tail != text:
        assert _b(text[len(text) - len(tail) - 1 :]) > limit


def test_counts_on_a_known_example() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 11))
    t = truncate_head(text, max_lines=3)
    assert (t.content, t.truncated_by, t.total_lines, t.output_lines) == ("line 1\nline 2\nline 3", "lines", 10, 3)
    t = truncate_tail(text, max_bytes=15)
    assert (t.content, t.truncated_by, t.output_lines, t.output_bytes) == ("line 9\nline 10", "bytes", 2, 14)


def test_a_single_line_over_the_byte_limit() -> None:
    line = "€" * 100  # 300 bytes
    head = truncate_head(line, max_bytes=50)
    assert head.content == "" and head.first_line_exceeds_limit and head.truncated_by == "bytes"
    tail = truncate_tail(line, max_bytes=50)
    assert tail.content == "€" * 16 and tail.last_line_partial and tail.output_bytes == 48


def test_only_the_final_newline_over_the_limit_is_not_a_truncation() -> None:
    # Found by the property tests: "a\n" against 1 byte used to report truncated_by="lines"
    # with every line shown, which would produce "Showing lines 1-1 of 1".
    for t in (truncate_head("a\n", max_lines=1, max_bytes=1), truncate_tail("a\n", max_lines=1, max_bytes=1)):
        assert (t.content, t.truncated, t.truncated_by, t.output_lines, t.total_lines) == ("a", False, None, 1, 1)
        assert (t.total_bytes, t.output_bytes) == (2, 1)


def test_cut_line_marker() -> None:
    assert cut_line("x" * 10, 10) == ("x" * 10, False)
    assert cut_line("x" * 11, 10) == ("x" * 10 + LINE_CUT_MARKER, True)
