"""The session tree for the report: one row per leaf, and the sessions that came out of this one.

A 100,000-entry session has a handful of branches; drawing every entry would make a page
nobody reads. The report lists each leaf instead: where it leaves the current path, how
long it is, its first prompt, its label and the branch summaries on it; the current leaf is
marked. Sub-agent sessions and forks record this session's file as their ``parentSession``
(docs/subagents.md, docs/sessions.md), and so do the children of a handoff, which this
session's own handoff records name: they are found by reading the first line of the
other files in the same session folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from heron.coding.handoff_link import HANDOFF_CUSTOM_TYPE, handoff_details
from heron.coding.report.data import BranchRow, text_of
from heron.session.entries import BranchSummaryEntry, CustomEntry, MessageEntry
from heron.session.store import SessionStore

PROMPT_PREVIEW = 160
MAX_CHILD_FILES = 2_000  # a folder with more session files is not scanned for children


def _first_prompt(store: SessionStore, types: list[str], indices: list[int]) -> str:
    for index in indices:
        if types[index] != "message" or store.role_at(index) != "user":
            continue
        entry = store.entry_at(index, cache=False)
        if isinstance(entry, MessageEntry):
            return text_of(entry.message)[:PROMPT_PREVIEW]
    return ""


def branch_rows(store: SessionStore) -> list[BranchRow]:
    """Every leaf of the tree, the current one first."""
    if not len(store):
        return []
    children = store.children_indices()
    ids, types = store.ids(), store.types()
    current_path = set(store.path_indices(store.leaf_id)) if store.leaf_id else set()
    leaves = [i for i, kids in enumerate(children) if not kids]
    rows: list[BranchRow] = []
    for leaf in leaves:
        path = store.path_indices(ids[leaf])
        own = [i for i in path if i not in current_path]
        fork = None
        if own:
            parent = store.parent_id_of(ids[own[0]])
            fork = parent if parent is not None else "(root)"
        summaries = []
        for index in own or path[-1:]:
            if types[index] == "branch_summary":
                entry = store.entry_at(index, cache=False)
                if isinstance(entry, BranchSummaryEntry):
                    summaries.append(entry.summary)
        rows.append(
            BranchRow(
                leaf_id=ids[leaf],
                length=len(path),
                fork_point=fork,
                first_prompt=_first_prompt(store, types, own or path),
                label=store.label_of(ids[leaf]),
                current=ids[leaf] == store.leaf_id,
                summaries=summaries,
            )
        )
    rows.sort(key=lambda r: (not r.current, -r.length))
    return rows


def _header(path: Path) -> dict[str, object] | None:
    try:
        with path.open("rb") as handle:
            line = handle.readline(64 * 1024)
        data = json.loads(line)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("type") == "session" else None


def child_sessions(store: SessionStore) -> list[dict[str, str]]:
    """Sessions whose header names this session's file as their parent (sub-agents, forks)."""
    if store.path is None:
        return []
    own = Path(store.path)
    try:
        siblings = sorted(p for p in own.parent.iterdir() if p.suffix == ".jsonl" and p != own)
    except OSError:
        return []
    found: list[dict[str, str]] = []
    handed = _handed_off(store)
    for path in siblings[:MAX_CHILD_FILES]:
        header = _header(path)
        if header is None or str(header.get("parentSession") or "") != str(own):
            continue
        kind = "handoff" if str(path) in handed else "sub-agent or fork"
        started = str(header.get("timestamp"))
        found.append({"id": str(header.get("id") or ""), "path": str(path), "started": started, "kind": kind})
    return found


def _handed_off(store: SessionStore) -> set[str]:
    """The child files this session's handoff records name (heron.coding.handoff)."""
    out: set[str] = set()
    for entry_id, kind in zip(store.ids(), store.types(), strict=True):
        if kind == "custom" and isinstance(entry := store.get(entry_id), CustomEntry):
            data = entry.data if entry.custom_type == HANDOFF_CUSTOM_TYPE else None
            if isinstance(data, dict) and isinstance(data.get("child"), str):
                out.add(data["child"])
    return out


def parent_session(store: SessionStore) -> dict[str, str] | None:
    """The session this one came from, and how (a handoff, or a sub-agent's or fork's parent)."""
    parent = store.header.parent_session
    if not parent:
        return None
    return {"path": parent, "kind": "handoff" if handoff_details(store) is not None else "sub-agent or fork"}
