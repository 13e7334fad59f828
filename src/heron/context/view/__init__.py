"""The view: the messages a request carries, derived from the session path and the decisions on it.

Built incrementally per request (read de-duplication, injected blocks, results whose call is
gone), the view the last request sent (which a shared summary request repeats), and tool-call
arguments shown shortened."""
