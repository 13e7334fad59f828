"""``heron batch``: many coding sessions at once, locally (asyncio) or on Ray.

See docs/batch.md. The pieces: :mod:`.tasks` reads TASKS.jsonl, :mod:`.results` keeps
results.jsonl (and so resume), :mod:`.workspace` gives each task its own copy of its
directory, :mod:`.runner` runs one task in a :class:`CodingSession`, :mod:`.driver`
bounds how many run at once and retries a task whose worker died, and the executors
(:mod:`.local`, :mod:`.ray_executor`) decide where a task runs.
"""
