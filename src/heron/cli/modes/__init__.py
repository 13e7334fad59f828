"""The four ways to run heron: interactive, print, json, rpc."""
