from __future__ import annotations

import logging

import pytest

from heron.context.records.ledger import Ledger, LedgerRecord


def test_records_roundtrip_and_notify() -> None:
    seen: list[LedgerRecord] = []
    ledger = Ledger()
    unsubscribe = ledger.subscribe(seen.append)
    record = ledger.add(
        LedgerRecord(
            kind="spill",
            ref="call_1",
            tool="bash",
            chars_before=80_000,
            chars_after=2_400,
            recover="read /tmp/x.txt",
            detail={"path": "/tmp/x.txt"},
        )
    )
    assert seen == [record]
    assert record.tokens_before == 20_000 and record.tokens_after == 600 and record.saved_tokens == 19_400
    assert LedgerRecord.from_json_dict(record.to_json_dict()) == record
    assert record.describe() == "spill bash [call_1]: 20,000 -> 600 tokens; read /tmp/x.txt"
    unsubscribe()
    ledger.add(LedgerRecord(kind="prune", chars_before=4_000, chars_after=400))
    assert len(seen) == 1
    assert ledger.totals() == {"spill": 19_400, "prune": 900}


def test_a_failing_listener_is_logged_and_the_others_still_hear(caplog: pytest.LogCaptureFixture) -> None:
    ledger = Ledger()
    seen: list[LedgerRecord] = []

    def broken(record: LedgerRecord) -> None:
        raise RuntimeError("display bug")

    ledger.subscribe(broken)
    ledger.subscribe(seen.append)
    with caplog.at_level(logging.ERROR, logger="heron.agent.emitter"):
        record = ledger.add(LedgerRecord(kind="prune", chars_before=4_000, chars_after=400))
    assert seen == [record]
    assert ledger.records == [record]  # the record is kept whatever the listeners do
    assert "ledger listener failed" in caplog.text and "display bug" in caplog.text


def test_a_listener_may_unsubscribe_while_a_record_is_delivered() -> None:
    ledger = Ledger()
    seen: list[str] = []
    unsubscribe_first = None

    def first(record: LedgerRecord) -> None:
        seen.append("first")
        assert unsubscribe_first is not None
        unsubscribe_first()

    unsubscribe_first = ledger.subscribe(first)
    ledger.subscribe(lambda record: seen.append("second"))
    ledger.add(LedgerRecord(kind="prune", chars_before=10, chars_after=1))
    ledger.add(LedgerRecord(kind="prune", chars_before=10, chars_after=1))
    assert seen == ["first", "second", "second"]
