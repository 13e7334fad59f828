"""Compaction: when the older history is summarised, where the cut falls, and running it.

The trigger (step boundaries, the model's ``compact`` call, the idle policy), the planner (the
cut point, split turns, files carried across), the run that writes a compaction only when it
shrinks the view, background summaries started before they are needed, and provider-native
compaction. The summary requests themselves are :mod:`heron.context.summary`."""
