"""structural_preview: keys, types and lengths, the first items, the largest slice that fits."""

from __future__ import annotations

import json

import pytest

from heron.context.tool_output import json_preview
from heron.context.tool_output.json_preview import structural_preview


def records(n: int) -> str:
    return json.dumps(
        {
            "items": [
                {"id": i, "name": f"item {i}", "tags": ["a", "b"], "score": i / 2, "note": None if i % 2 else "x"}
                for i in range(n)
            ],
            "total": n,
            "cursor": "c" * 500,
        }
    )


def test_shows_keys_types_lengths_and_first_items() -> None:
    text = records(5_000)
    preview = structural_preview(text, 2_000)
    assert preview is not None and len(preview) <= 2_000
    assert preview.startswith(f"[JSON object, 3 keys, {len(text):,} chars.")
    assert '"items": [5,000 x {' in preview
    assert '"id": int' in preview and '"score": float' in preview and '"note": str | null' in preview
    assert '"tags": [2 x str]' in preview and '"total": int' in preview
    assert '"name": "item 0"' in preview and "more items" in preview
    assert "more characters" in preview  # the long cursor string is cut


@pytest.mark.parametrize("budget", [600, 1_000, 2_000, 5_000, 20_000])
def test_the_largest_slice_that_fits(budget: int) -> None:
    text = records(5_000)
    preview = structural_preview(text, budget)
    assert preview is not None and len(preview) <= budget
    value = json.loads(text)
    k = int(preview.split("arrays cut to ")[1].split(" item")[0].replace(",", ""))
    head = preview[: preview.index("\n[First items")]
    assert len(head) + len(json_preview._sample_text(value, k + 1)) > budget  # one more item would not fit


def test_is_deterministic() -> None:
    text = records(300)
    assert structural_preview(text, 1_500) == structural_preview(text, 1_500)


def test_a_whole_small_document_is_shown_uncut() -> None:
    text = json.dumps([{"a": 1}, {"a": 2, "b": [True]}])
    preview = structural_preview(text, 1_000)
    assert preview is not None
    assert '[2 x {"a": int, "b": [1 x bool]}]' in preview
    assert json.loads(preview.split("characters:]\n", 1)[1]) == json.loads(text)


def test_mixed_item_types_are_a_union() -> None:
    preview = structural_preview(json.dumps([1, "two", None, [3]]), 1_000)
    assert preview is not None and "[4 x int | str | null | [1 x int]]" in preview


def test_deep_structures_are_cut_by_depth_when_the_budget_is_small() -> None:
    deep: object = 1
    for i in range(40):
        deep = {f"level{i}": deep, "pad": "p" * 10}
    preview = structural_preview(json.dumps(deep), 400)
    assert preview is not None and len(preview) <= 400 and "{…}" in preview


@pytest.mark.parametrize("text", ["not json", '"just a string"', "42", "", "{'a': 1}"])
def test_no_preview_for_what_is_not_a_json_container(text: str) -> None:
    assert structural_preview(text, 2_000) is None


def test_no_preview_when_nothing_fits() -> None:
    assert structural_preview(records(10), 20) is None
