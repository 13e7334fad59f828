"""Compaction: when the older history is summarised, where the cut falls, and running it.

The trigger (step boundaries, the model's ``compact`` call, the idle policy), the planner
(the cut point, split turns, files carried across), the summariser
(:mod:`heron.context.compaction.summary`), the run that writes a compaction only when it
shrinks the view (with the files it re-injects), background summaries started before they
are needed, and provider-native compaction."""
