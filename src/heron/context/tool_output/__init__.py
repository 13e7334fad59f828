"""Tool output too large for the context: truncated with exact notices, or spilled to a file with a preview.

The limits every tool obeys (shrunk for small windows), head and tail truncation, the
budgets of one result and of one step's results, spill files and the JSON preview of a
spilled document. Applied once, when a result is recorded; the session keeps what the model saw."""
