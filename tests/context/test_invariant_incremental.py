"""The incremental invariant check (warn mode in a long-lived process): each request is
read only where it differs from the previous one, and finds what the whole check finds
in that part.

A session's requests grow at the end; the check must report a violation the request that
first carries it, whatever came before, and read everything again when an earlier part
changed (a prune step changes the recorded stubs; a compaction replaces the start).
"""

from __future__ import annotations

from heron.agent.messages import AgentMessage
from heron.context.records.decisions import ContextDecisions
from heron.context.rules.invariants import IncrementalCheck, check_request
from heron.context.view.build import ViewBuilder
from tests.context.test_invariant_rules import CWD, assistant, call, dedup, result, snapshot, user, whole
from tests.support.tools import BUILTIN


def turns(n: int) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for i in range(n):
        out += [user(f"turn {i}"), assistant(call(f"c{i}", path=f"f{i}.py")), whole(f"c{i}"), assistant(text="ok")]
    return out


def rules_of(violations: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(v.rule, v.message) for v in violations]


def test_a_growing_session_is_checked_like_the_whole_check_and_reports_each_problem_once() -> None:
    check = IncrementalCheck()
    messages = turns(3)
    assert check.check(snapshot(messages)) == check_request(snapshot(messages)) == []
    # A result without its call arrives: reported with the request that carries it ...
    messages = [*messages, result("ghost", name="bash")]
    first = rules_of(check.check(snapshot(messages)))
    assert first == rules_of(check_request(snapshot(messages)))
    assert first == [("f.tool-pairing", "tool result ghost has no call before it")]
    # ... and not again for the requests that repeat it; a new problem is still found.
    messages = [*messages, user("next"), assistant(call("c9", path="a.py")), dedup("c9")]
    later = rules_of(check.check(snapshot(messages)))
    assert later == [("b.dedup-has-referent", "read c9: de-dup stub without that content earlier")]
    assert later == [v for v in rules_of(check_request(snapshot(messages))) if v not in first]


def test_what_is_open_at_the_end_is_judged_on_every_request() -> None:
    check = IncrementalCheck()
    messages = [*turns(1), user("go"), assistant(call("c5"))]
    assert rules_of(check.check(snapshot(messages))) == [("f.tool-pairing", "tool call c5 has no result")]
    assert check.check(snapshot([*messages, whole("c5")])) == []


def test_a_changed_prefix_or_new_stubs_are_read_whole_again() -> None:
    check = IncrementalCheck()
    messages = turns(4)
    assert check.check(snapshot(messages)) == []
    # A prune step: the recorded stubs change, and the view sent without them is caught.
    problems = rules_of(check.check(snapshot(messages, stubs={"c1": "[Pruned]"})))
    assert problems == [("c.pruned-stays-pruned", "result c1 was pruned but is sent without its stub")]
    # A compaction: the list starts differently; the earlier part is read again.
    replaced = [user("summary"), *messages[8:], result("ghost", name="bash")]
    assert rules_of(check.check(snapshot(replaced))) == rules_of(check_request(snapshot(replaced)))


def test_the_count_is_the_views_own_and_equals_a_fresh_count() -> None:
    """Warn mode takes the count kept while the view was built; strict mode recounts -
    both judge the same request the same way."""
    builder = ViewBuilder(CWD, BUILTIN)
    messages = [user("x" * 36_000), *turns(2)]
    view = builder.apply(messages, ContextDecisions())
    shot = snapshot(view)
    assert rules_of(IncrementalCheck().check(shot)) == rules_of(check_request(shot))
    assert {v.rule for v in check_request(shot)} == {"a.fits-window"}
    # Extended by a turn: the builder's running count still equals a fresh one.
    view = builder.apply([*messages, *turns(1)], ContextDecisions())
    shot = snapshot(view)
    assert rules_of(IncrementalCheck().check(shot)) == rules_of(check_request(shot))
