"""A structural preview of a large JSON document, for results too big for the context.

The first 2,000 characters of a JSON API response are usually the opening of its first
record: they say nothing about how many records there are, what other keys the top
level has, or what the last fields look like. So a JSON result that is spilled gets this
preview instead: the *structure* (every key, each value's type, every array's length,
merged over the first items of each array), then the document itself with every array
cut to its first ``k`` items, every object to its first ``4k`` keys and every string to
``16k`` characters, where ``k`` is the largest that fits the budget (found by binary
search). The whole document stays in the spill file, where ``json_query`` can drill in.

Pure and deterministic: the same text and budget always give the same preview.
"""

from __future__ import annotations

import json
import math
from typing import Any

SCHEMA_SHARE = 0.5  # at most this share of the budget goes to the structure
_SAMPLE_ITEMS = 50  # array items whose shapes are merged into the structure
_MAX_DEPTH = 64
_MAX_NODES = 20_000  # nodes visited when working out the structure
_INLINE = 72  # a structure that fits in this many characters is written on one line
_MAX_K = 10_000


def structural_preview(text: str, budget_chars: int) -> str | None:
    """The preview of ``text`` in at most ``budget_chars`` characters, or None when it
    is not a JSON object or array (or not even the outline fits)."""
    try:
        value = json.loads(text.strip().lstrip("\ufeff"))
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict | list):
        return None
    headline = f"[JSON {_describe(value)}, {len(text):,} chars. Structure (N x T = N items of type T):]"
    room = budget_chars - len(headline) - 1
    if room <= 0:
        return None
    try:
        shape = _shape(value, 0, [0])
        schema = _fit_schema(shape, int(room * SCHEMA_SHARE) if _needs_sample(value) else room)
    except RecursionError:
        return None
    if schema is None:
        return None
    out = f"{headline}\n{schema}"
    rest = budget_chars - len(out)
    sample = _fit_sample(value, rest)
    if sample is not None:
        out += sample
    return out


def _describe(value: dict[str, Any] | list[Any]) -> str:
    if isinstance(value, dict):
        return f"object, {len(value):,} key{'s' if len(value) != 1 else ''}"
    return f"array, {len(value):,} item{'s' if len(value) != 1 else ''}"


def _needs_sample(value: Any) -> bool:
    return bool(value)


# --- structure ---------------------------------------------------------------------------

# A shape is ("scalar", type name) | ("array", length, item shape | None)
#          | ("object", [(key, shape)], key count) | ("union", [shapes]) | ("deep",)
Shape = tuple[Any, ...]


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str"


def _shape(value: Any, depth: int, budget: list[int]) -> Shape:
    budget[0] += 1
    if depth >= _MAX_DEPTH or budget[0] > _MAX_NODES:
        return ("deep",)
    if isinstance(value, dict):
        return ("object", [(str(k), _shape(v, depth + 1, budget)) for k, v in value.items()], len(value))
    if isinstance(value, list):
        item: Shape | None = None
        for element in value[:_SAMPLE_ITEMS]:
            item = _merge(item, _shape(element, depth + 1, budget))
        return ("array", len(value), item)
    return ("scalar", _scalar(value))


def _merge(a: Shape | None, b: Shape) -> Shape:
    """One shape for two array items: objects merge their keys, other differences give a union."""
    if a is None or a == b:
        return b
    if a[0] == "object" and b[0] == "object":
        keys: dict[str, Shape] = dict(a[1])
        for key, shape in b[1]:
            keys[key] = _merge(keys.get(key), shape)
        return ("object", list(keys.items()), max(a[2], b[2], len(keys)))
    if a[0] == "array" and b[0] == "array":
        item = b[2] if a[2] is None else (a[2] if b[2] is None else _merge(a[2], b[2]))
        return ("array", max(a[1], b[1]), item)
    members = list(a[1]) if a[0] == "union" else [a]
    for shape in b[1] if b[0] == "union" else [b]:
        if shape not in members:
            members.append(shape)
    return ("union", members)


def _render_shape(shape: Shape, depth: int, limit: int, indent: str = "") -> str:
    kind = shape[0]
    if kind == "scalar":
        return str(shape[1])
    if kind == "deep":
        return "…"
    if kind == "union":
        return " | ".join(_render_shape(s, depth, limit, indent) for s in shape[1])
    if depth >= limit:
        return "{…}" if kind == "object" else f"[{shape[1]:,} x …]"
    if kind == "array":
        item = "…" if shape[2] is None else _render_shape(shape[2], depth + 1, limit, indent)
        return f"[{shape[1]:,} x {item}]" if shape[1] else "[]"
    fields = [
        (json.dumps(k, ensure_ascii=False), _render_shape(s, depth + 1, limit, indent + "  ")) for k, s in shape[1]
    ]
    if not fields:
        return "{}"
    one_line = "{" + ", ".join(f"{k}: {v}" for k, v in fields) + "}"
    if len(one_line) <= _INLINE and "\n" not in one_line:
        return one_line
    inner = ",\n".join(f"{indent}  {k}: {v}" for k, v in fields)
    return "{\n" + inner + "\n" + indent + "}"


def _shape_depth(shape: Shape) -> int:
    if shape[0] == "array":
        return 1 + (_shape_depth(shape[2]) if shape[2] is not None else 0)
    if shape[0] == "object":
        return 1 + max((_shape_depth(s) for _, s in shape[1]), default=0)
    if shape[0] == "union":
        return max(_shape_depth(s) for s in shape[1])
    return 0


def _fit_schema(shape: Shape, room: int) -> str | None:
    """The structure down to the deepest level that fits in ``room`` characters."""
    full = _shape_depth(shape)
    best: str | None = None
    low, high = 1, max(1, full)
    while low <= high:
        mid = (low + high) // 2
        text = _render_shape(shape, 0, mid)
        if len(text) <= room:
            best, low = text, mid + 1
        else:
            high = mid - 1
    return best


# --- the first items ----------------------------------------------------------------------


def _cut(value: Any, k: int, depth: int = 0) -> Any:
    """The document with arrays cut to ``k`` items, objects to ``4k`` keys, strings to ``16k``."""
    if depth >= _MAX_DEPTH:
        return "…"
    if isinstance(value, list):
        kept = [_cut(v, k, depth + 1) for v in value[:k]]
        if len(value) > k:
            kept.append(f"… {len(value) - k:,} more items")
        return kept
    if isinstance(value, dict):
        keys = list(value)[: 4 * k]
        out = {key: _cut(value[key], k, depth + 1) for key in keys}
        if len(value) > len(keys):
            out["…"] = f"{len(value) - len(keys):,} more keys"
        return out
    if isinstance(value, str) and len(value) > 16 * k:
        return f"{value[: 16 * k]}… ({len(value) - 16 * k:,} more characters)"
    return value


def _largest(value: Any) -> int:
    """The ``k`` past which cutting changes nothing."""
    stack, most = [value], 1
    seen = 0
    while stack and seen < _MAX_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, list):
            most = max(most, len(node))
            stack.extend(node[:_SAMPLE_ITEMS])
        elif isinstance(node, dict):
            most = max(most, math.ceil(len(node) / 4))
            stack.extend(list(node.values())[:_SAMPLE_ITEMS])
        elif isinstance(node, str):
            most = max(most, math.ceil(len(node) / 16))
    return min(most, _MAX_K)


def _dumps(value: Any, indent: str = "") -> str:
    """JSON with small containers on one line and large ones one member per line."""
    compact = json.dumps(value, ensure_ascii=False)
    if len(compact) <= 2 * _INLINE or not isinstance(value, dict | list) or not value:
        return compact
    inner = indent + " "
    if isinstance(value, list):
        members = [inner + _dumps(v, inner) for v in value]
        return "[\n" + ",\n".join(members) + "\n" + indent + "]"
    members = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_dumps(v, inner)}" for k, v in value.items()]
    return "{\n" + ",\n".join(members) + "\n" + indent + "}"


def _sample_text(value: Any, k: int) -> str:
    body = _dumps(_cut(value, k))
    return (
        f"\n[First items: arrays cut to {k:,} item{'s' if k != 1 else ''}, objects to {4 * k:,} keys, "
        f"strings to {16 * k:,} characters:]\n{body}"
    )


def _fit_sample(value: Any, room: int) -> str | None:
    """The sample with the largest ``k`` that fits in ``room`` (binary search)."""
    best: str | None = None
    low, high = 1, _largest(value)
    while low <= high:
        mid = (low + high) // 2
        text = _sample_text(value, mid)
        if len(text) <= room:
            best, low = text, mid + 1
        else:
            high = mid - 1
    return best
