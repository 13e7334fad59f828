"""Context management: truncation, budgets, pruning, compaction and the ledger.

Mostly pure functions over messages; the coding runtime decides when to call them.
"""
