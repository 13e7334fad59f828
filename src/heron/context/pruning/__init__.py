"""Pruning: old tool results replaced by stubs in the request (never in the session), in recorded steps.

The stub rule, when a step is taken (the high- and low-water marks), and the cold prompt
cache that makes a step free."""
