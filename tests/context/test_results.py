"""Result budgets: spill files, previews, notices, and the per-turn aggregate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from heron.ai.types import ImageContent, TextContent, ToolResultMessage
from heron.context.tool_output.limits import ToolLimits
from heron.context.tool_output.results import (
    SPILL_KEY,
    apply_message_budget,
    apply_result_budget,
    apply_turn_budget,
    make_preview,
    spill_file_name,
    tail_is_important,
)

LIMITS = ToolLimits()  # 50,000 chars per result, 2,000-char preview, 200,000 per turn


def lines(n: int, width: int = 40, prefix: str = "row") -> str:
    return "".join(f"{prefix} {i}".ljust(width) + "\n" for i in range(1, n + 1))


def message(call_id: str, text: str, details: object = None) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name="bash", content=[TextContent(text=text)], details=details)


def test_a_result_within_the_budget_is_untouched(tmp_path: Path) -> None:
    text = "x" * 50_000
    outcome = apply_result_budget(text, "call-1", LIMITS, tmp_path)
    assert outcome.text is text and not outcome.spilled
    assert (outcome.chars_before, outcome.chars_after, outcome.spill_path) == (50_000, 50_000, None)
    assert not tmp_path.joinpath("call-1.txt").exists()


def test_a_large_result_is_spilled_with_a_head_preview(tmp_path: Path) -> None:
    text = lines(2000)  # 82,000 characters of plain rows
    outcome = apply_result_budget(text, "toolu_01", LIMITS, tmp_path / "spill")
    path = tmp_path / "spill" / "toolu_01.txt"
    assert path.read_text() == text  # nothing is lost
    head = text[:1968]  # 48 whole rows of 41 characters: the cut falls on a line boundary
    assert head.endswith("row 48".ljust(40) + "\n") and len(head) <= 2000
    assert outcome.text == (
        f"{head[:-1]}\n\n"
        f"[Output too large for the context: 82,000 characters, 2,000 lines. The full output is in {path}; "
        "shown here: the first 1,967 characters. "
        "Use read with offset/limit on that file to see the rest, or grep to search it.]"
    )
    assert outcome.spilled and outcome.preview == "head" and outcome.reason == "result"
    assert (outcome.chars_before, outcome.chars_after) == (82_000, len(outcome.text))
    assert outcome.spill_path == str(path)


def test_an_important_tail_gets_head_and_tail(tmp_path: Path) -> None:
    text = lines(2000) + "Traceback (most recent call last):\n  File 'x.py', line 3\nValueError: boom\n"
    outcome = apply_result_budget(text, "c1", LIMITS, tmp_path)
    assert outcome.preview == "head+tail"
    body, notice = outcome.text.rsplit("\n\n[Output too large", 1)
    head, tail = body.split("\n\n[... ", 1)
    omitted, tail = tail.split(" characters omitted ...]\n\n", 1)
    assert text.startswith(head) and len(head) <= 1500
    assert text.endswith(tail) and len(tail) <= 500 and tail.endswith("ValueError: boom\n")
    assert int(omitted.replace(",", "")) == len(text) - len(head) - len(tail)
    assert notice == (
        f" for the context: {len(text):,} characters, 2,003 lines. The full output is in {tmp_path / 'c1.txt'}; "
        f"shown here: the first {len(head):,} and last {len(tail):,} characters. "
        "Use read with offset/limit on that file to see the rest, or grep to search it.]"
    )


@pytest.mark.parametrize(
    "ending",
    [
        "error: cannot find symbol\n",
        "FAILED tests/test_x.py::test_y - AssertionError\n",
        "RuntimeException in thread main\n",
        "===== 3 failed, 120 passed in 4.2s =====\n",
        "Summary: 10 files changed\n",
        '  "last": true\n}\n',
        "]",
    ],
)
def test_tails_that_look_important(ending: str) -> None:
    assert tail_is_important(lines(100) + ending)


def test_an_ordinary_tail_is_not_important() -> None:
    assert not tail_is_important(lines(100))
    preview, kind, head, tail = make_preview(lines(100), 500)
    assert kind == "head" and tail == 0 and preview == lines(100)[:head]


def test_output_that_ends_like_json_keeps_its_closing_bracket(tmp_path: Path) -> None:
    text = "log line\n" * 20000 + json.dumps({"summary": {"failed": 3, "passed": 97}})
    outcome = apply_result_budget(text, "c1", LIMITS, tmp_path)
    assert outcome.preview == "head+tail"
    assert outcome.text.split("\n\n[Output too large")[0].endswith("}")


def test_a_json_result_gets_a_structural_preview_and_the_spill_path(tmp_path: Path) -> None:
    text = json.dumps({"items": [{"id": i, "name": f"item {i}"} for i in range(5000)], "total": 5000}, indent=1)
    outcome = apply_result_budget(text, "c1", LIMITS, tmp_path)
    assert outcome.preview == "json" and len(outcome.text) < LIMITS.preview_chars + 600
    assert '"items"' in outcome.text and "5000" in outcome.text  # keys and the array length
    assert outcome.spill_path is not None and Path(outcome.spill_path).read_text() == text
    assert "json_query" in outcome.text


def test_call_ids_become_safe_unique_file_names(tmp_path: Path) -> None:
    assert spill_file_name("toolu_01ABC") == "toolu_01ABC.txt"
    odd = spill_file_name("call_1|fc_2")
    assert odd.startswith("call_1_fc_2-") and odd.endswith(".txt")
    assert spill_file_name("call_1|fc_2") != spill_file_name("call_1/fc_2")
    escape = spill_file_name("../../etc/passwd")
    assert "/" not in escape and not escape.startswith(".")
    assert spill_file_name("").startswith("result-")
    assert len(spill_file_name("x" * 500)) < 120
    outcome = apply_result_budget("y" * 60_000, "../../evil", LIMITS, tmp_path / "spill")
    assert outcome.spill_path is not None and Path(outcome.spill_path).parent == tmp_path / "spill"


def test_an_existing_full_output_file_is_reused(tmp_path: Path) -> None:
    full = tmp_path / "bash-output.log"
    full.write_text("the whole output\n" * 10_000)
    text = "z" * 51_000
    outcome = apply_result_budget(text, "c1", LIMITS, tmp_path / "spill", existing_path=str(full))
    assert outcome.spill_path == str(full) and outcome.reused_existing_file
    assert not (tmp_path / "spill").exists()
    assert f"The full output is in {full};" in outcome.text


def test_a_missing_existing_file_is_not_trusted(tmp_path: Path) -> None:
    outcome = apply_result_budget("z" * 51_000, "c1", LIMITS, tmp_path, existing_path=str(tmp_path / "gone.log"))
    assert outcome.spill_path == str(tmp_path / "c1.txt") and not outcome.reused_existing_file
    assert (tmp_path / "c1.txt").read_text() == "z" * 51_000


def test_the_spill_is_written_before_the_result_changes(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    msg = message("c1", "q" * 60_000)
    with pytest.raises(OSError):
        apply_message_budget(msg, LIMITS, blocker / "spill")
    assert msg.text() == "q" * 60_000  # untouched: no preview without a saved copy


def test_same_id_different_text_does_not_overwrite(tmp_path: Path) -> None:
    a = apply_result_budget("a" * 60_000, "c1", LIMITS, tmp_path)
    b = apply_result_budget("b" * 60_000, "c1", LIMITS, tmp_path)
    again = apply_result_budget("a" * 60_000, "c1", LIMITS, tmp_path)
    assert a.spill_path != b.spill_path and again.spill_path == a.spill_path
    assert b.spill_path is not None and Path(b.spill_path).read_text() == "b" * 60_000


def test_message_budget_keeps_images_and_details(tmp_path: Path) -> None:
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    msg = ToolResultMessage(
        tool_call_id="c1",
        tool_name="read",
        content=[TextContent(text="t" * 30_000), image, TextContent(text="u" * 30_000)],
        details={"path": "x"},
    )
    new, outcome = apply_message_budget(msg, LIMITS, tmp_path)
    assert outcome.spilled and outcome.chars_before == 60_000
    assert (tmp_path / "c1.txt").read_text() == "t" * 30_000 + "u" * 30_000
    assert new.content[1] is image and len(new.content) == 2
    assert new.details["path"] == "x" and new.details[SPILL_KEY]["spill_path"] == str(tmp_path / "c1.txt")
    assert msg.details == {"path": "x"}  # the original message is not modified
    assert new.tool_call_id == "c1" and new.tool_name == "read"


def test_bash_result_with_its_own_file_points_there(tmp_path: Path) -> None:
    full = tmp_path / "bash-1.log"
    full.write_text("full\n")
    msg = message("c1", "o" * 55_000, details={"full_output_path": str(full)})
    new, outcome = apply_message_budget(msg, LIMITS, tmp_path / "spill")
    assert outcome.reused_existing_file and outcome.spill_path == str(full)
    assert new.details["full_output_path"] == str(full)


def test_turn_budget_spills_the_largest_first_until_it_fits(tmp_path: Path) -> None:
    limits = ToolLimits(result_chars=1_000, preview_chars=100, turn_chars=2_500)
    results = [message("a", "a" * 700), message("b", "b" * 900), message("c", "c" * 800), message("d", "d" * 300)]
    new, outcomes = apply_turn_budget(results, limits, tmp_path)
    assert [o.call_id for o in outcomes] == ["b"]
    assert outcomes[0].reason == "turn" and outcomes[0].chars_before == 900
    assert new[0] is results[0] and new[2] is results[2] and new[3] is results[3]
    assert (tmp_path / "b.txt").read_text() == "b" * 900
    assert sum(len(m.text()) for m in new) <= 2_500


def test_turn_budget_spills_several_and_counts_per_result_spills(tmp_path: Path) -> None:
    limits = ToolLimits(result_chars=5_000, preview_chars=200, turn_chars=6_000)
    results = [message("big", "x" * 9_000), *(message(f"m{i}", str(i) * 2_000) for i in range(4))]
    new, outcomes = apply_turn_budget(results, limits, tmp_path)
    assert [(o.call_id, o.reason) for o in outcomes] == [("big", "result"), ("m0", "turn"), ("m1", "turn")]
    assert sum(len(m.text()) for m in new) <= 6_000
    for o in outcomes:
        assert o.spill_path is not None and len(Path(o.spill_path).read_text()) == o.chars_before


def test_turn_budget_never_spills_twice(tmp_path: Path) -> None:
    limits = ToolLimits(result_chars=1_000, preview_chars=100, turn_chars=1_500)
    results = [message("a", "a" * 900), message("b", "b" * 950)]
    first, outcomes = apply_turn_budget(results, limits, tmp_path)
    assert outcomes
    second, again = apply_turn_budget(first, limits, tmp_path)
    assert again == [] and all(x is y for x, y in zip(first, second, strict=True))


def test_turn_budget_stops_when_nothing_can_shrink(tmp_path: Path) -> None:
    limits = ToolLimits(result_chars=1_000, preview_chars=100, turn_chars=500)
    results = [message(str(i), "s" * 400) for i in range(5)]  # each shorter than preview + notice
    new, outcomes = apply_turn_budget(results, limits, tmp_path)
    assert outcomes == [] and new == results


def test_outcome_json_for_the_ledger(tmp_path: Path) -> None:
    outcome = apply_result_budget("w" * 60_000, "c9", LIMITS, tmp_path)
    data = outcome.to_json()
    assert data == {
        "call_id": "c9",
        "spilled": True,
        "chars_before": 60_000,
        "chars_after": len(outcome.text),
        "spill_path": str(tmp_path / "c9.txt"),
        "reused_existing_file": False,
        "preview": "head",
        "reason": "result",
    }
    json.dumps(data)
