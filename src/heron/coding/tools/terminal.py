"""Bytes from a terminal-oriented program made into plain text the model can use.

Terminal noise costs tokens and confuses models: colour and cursor escapes are removed,
and so are control characters. A carriage return is kept: what it means (a progress bar
redrawing its line) depends on the whole line, which the output collector decides.
"""

from __future__ import annotations

import codecs
import re

# Every pattern starts with a literal ESC so that the regex engine can skip plain text at
# C speed; 8-bit (C1) introducers are first rewritten to their ESC forms.
_ESCAPES = re.compile(
    r"\x1b(?:"
    r"\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor movement, erase
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks (ends with BEL or ST)
    r"|[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|[ -/]*[0-~]?"  # charset selection, keypad modes, and a lone ESC
    r")"
)
# A sequence cut off by the end of a read: carried over to the next one.
_PARTIAL = re.compile(r"\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[PX^_][^\x1b]*\x1b?|[ -/]*)")
_C1_TO_ESC = {0x9B: "\x1b[", 0x9D: "\x1b]", 0x9C: "\x1b\\", 0x90: "\x1bP", 0x98: "\x1bX", 0x9E: "\x1b^", 0x9F: "\x1b_"}
_C1_INTRODUCERS = tuple(chr(c) for c in _C1_TO_ESC)
_OVERSTRIKE = re.compile(r"[^\n\x08]\x08")  # "x\bx" (man pages): keep what a terminal shows
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")  # all but \t \n \r
# Raw bytes that send a chunk down the slow path: C0 controls except \t and \n (\r, ESC and
# backspace included), DEL, and 0xC2, the lead byte of every UTF-8-encoded C1 control.
_SPECIAL_BYTES = bytes([*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, 0xC2])
_CONTROL_BYTES = bytes(b for b in _SPECIAL_BYTES if b not in (0x0D, 0x1B))  # all but CR and ESC
# An escape sequence longer than this that never ends is garbage, not something to wait for.
_MAX_CARRY = 4096


class StreamSanitizer:
    """Bytes from a terminal-oriented program -> plain text, chunk by chunk.

    Decodes UTF-8 with replacement characters, removes escape sequences (even when one
    is split across two reads) and control characters. Carriage returns are kept: what
    they mean depends on the line they are in, which :class:`OutputCollector` decides.
    Output without any special byte (the bulk of large outputs) takes a fast path that
    costs a decode and one C-level scan.
    """

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._carry = ""
        self._after_c2 = False

    def feed(self, data: bytes) -> str:
        text = self._decoder.decode(data)
        after_c2, self._after_c2 = self._after_c2, data.endswith(b"\xc2")
        if self._carry or after_c2:
            return self._clean(self._carry + text)
        size = len(data)
        if len(data.translate(None, _SPECIAL_BYTES)) == size:
            return text
        # Coloured output usually has ESC and CR only: then the control-character pass,
        # as slow as the escape pass, can be skipped.
        return self._clean(text, controls=len(data.translate(None, _CONTROL_BYTES)) != size)

    def finish(self) -> str:
        """Whatever is left: an unfinished escape sequence at the very end is dropped."""
        text = self._carry + self._decoder.decode(b"", final=True)
        return self._clean(text, final=True)

    def _clean(self, text: str, final: bool = False, controls: bool = True) -> str:
        self._carry = ""
        if controls and any(c in text for c in _C1_INTRODUCERS):
            text = text.translate(_C1_TO_ESC)
        if "\x1b" in text:
            cut = _partial_start(text)
            if cut is not None:
                if not final:
                    self._carry = text[cut:]
                text = text[:cut]
            text = _ESCAPES.sub("", text)
        if not controls:
            return text
        if "\x08" in text:
            text = _OVERSTRIKE.sub("", text)
        return _CONTROLS.sub("", text)


def _partial_start(text: str) -> int | None:
    """Where an escape sequence that the end of ``text`` cut off begins, if one does.

    At most two ESCs can be part of it (the introducer and the first half of a string
    terminator, as in ``ESC ] 0;title ESC``), so two candidates are enough.
    """
    floor = max(0, len(text) - _MAX_CARRY)
    last = text.rfind("\x1b", floor)
    if last == -1 or _PARTIAL.fullmatch(text, last) is None:
        return None
    before = text.rfind("\x1b", floor, last)
    if before != -1 and _PARTIAL.fullmatch(text, before) is not None:
        return before
    return last
