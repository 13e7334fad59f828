"""Continuity: what keeps the agent where it was across compactions, and what heads every request.

The frontier injected after a compaction (the plan, invoked skills, recent steps),
the task list, the sub-agent registry, and the session's goal with its loop state - each stored
in the session and rendered the same bytes by any process that reads it."""
