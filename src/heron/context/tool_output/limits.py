"""The output limits every tool obeys, and how they shrink for small context windows.

The absolute defaults are caps for large windows; each is also capped by a
share of the model's window so that a 16k-token local model works with the defaults
(one result <= 15% of the window, all results of one turn <= 50%). Tokens are turned
into characters/bytes at 4 per token, the same estimate heron uses everywhere. The table of
limits is in docs/context.md ("Limits that scale with the window").
"""

from __future__ import annotations

from dataclasses import dataclass, replace

CHARS_PER_TOKEN = 4
# One result's share of the window. Pruning frees room in steps (docs/context.md,
# "Pruning"): with one result at 30% of a small window, the latest result alone filled
# half the input budget after a step and the next big one forced another step, a
# prompt-cache miss nearly every turn; at 15% a step lasts several results.
RESULT_WINDOW_SHARE = 0.075
TURN_WINDOW_SHARE = 0.50


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """The output limits of the built-in tools, in one place so the tools and the context
    layer agree on what a full result would have been."""

    # read / bash / generic text output: whichever limit hits first
    max_lines: int = 2_000
    max_bytes: int = 51_200
    # read: a line longer than this is cut with a marker
    line_chars: int = 2_000
    # read: a file larger than this read without offset/limit gets its first page + a notice
    large_file_bytes: int = 256 * 1024
    # grep / find / ls
    grep_matches: int = 100
    grep_line_chars: int = 500
    find_results: int = 1_000
    ls_entries: int = 500
    # per-result budget: larger results are spilled to disk, the model sees a preview
    result_chars: int = 50_000
    preview_chars: int = 2_000
    # all results of one assistant message together
    turn_chars: int = 200_000
    # one result's share of a small window (the setting ``toolLimits.windowShare``)
    window_share: float = RESULT_WINDOW_SHARE

    def for_window(self, context_window: int) -> ToolLimits:
        """These limits, capped by shares of a model's context window (in tokens)."""
        window_chars = max(1, context_window) * CHARS_PER_TOKEN
        per_result = int(window_chars * self.window_share)
        per_turn = int(window_chars * TURN_WINDOW_SHARE)
        return replace(
            self,
            max_bytes=min(self.max_bytes, per_result),
            result_chars=min(self.result_chars, per_result),
            preview_chars=min(self.preview_chars, max(200, per_result // 4)),
            turn_chars=min(self.turn_chars, per_turn),
        )


DEFAULT_LIMITS = ToolLimits()


def format_size(size: int) -> str:
    """Sizes in notices: ``512B``, ``50.0KB``, ``2.1MB`` (pi's wording)."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}KB"
    if size < 1024 * 1024 * 1024:
        return f"{size / (1024 * 1024):.1f}MB"
    return f"{size / (1024 * 1024 * 1024):.1f}GB"
