"""``/compact [focus]`` typed as a prompt, in every mode that runs prompts through
:class:`~heron.coding.run.Run`: ``heron -p --continue /compact``, ``heron compact``, json
mode, an rpc ``prompt``.

The interactive mode and ACP read their own ``/compact`` (a command of their own, with
their own display); this module is the one place that says what the text means and
what a compaction asked for this way answers. The answer is the run's answer, as a
``/goal`` reply is: a compaction written is an answer (exit 0 in print mode); one that
wrote nothing, or failed, is the run's error, so a script that compacts before going on
knows it did not happen.
"""

from __future__ import annotations

from heron.coding.events import CompactionEndEvent

COMPACT_COMMAND = "/compact"


def compact_focus(text: str) -> str | None:
    """The focus of ``/compact [focus]`` (``""`` for none); None when ``text`` is not that command."""
    stripped = text.strip()
    if not stripped.startswith(COMPACT_COMMAND):
        return None
    rest = stripped[len(COMPACT_COMMAND) :]
    if rest and not rest[0].isspace():
        return None  # "/compacted", an extension's "/compact-x": not this command
    return rest.strip()


def compaction_reply(end: CompactionEndEvent) -> tuple[str, bool]:
    """What the compaction's end answers, and whether that is an error (nothing written)."""
    if end.entry_id is not None:
        text = (
            f"Compacted: ~{end.tokens_before:,} -> ~{end.tokens_after:,} tokens "
            "(the full history stays in the session file)."
        )
        if end.auto_disabled:
            text += f"\nAutomatic compaction is off: {end.auto_disabled}"
        return text, False
    if end.error:
        return f"/compact failed: {end.error}", True
    return f"/compact: nothing compacted: {end.skipped or 'nothing to compact'}", True
