"""What the context layer writes into the session: its decisions and its ledger.

Decisions (prune steps, learned windows, shortened arguments, budget notices, compaction off)
make a resumed process send the same bytes; the ledger says what was kept out of the view and
how to get it back; ordering gives such an entry a millisecond of its own."""
