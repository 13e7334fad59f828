"""The summary requests: what the summariser reads and asks, for a compaction and a branch summary.

Prompts and the conversation as text (with the fallbacks that shrink it), the draft-then-summary
and chunked refinements, and the request that repeats the conversation's cached prefix. The
context layer never sends a request: the caller gives the function that does."""
