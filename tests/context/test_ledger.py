from __future__ import annotations

from heron.context.ledger import Ledger, LedgerRecord


def test_records_roundtrip_and_notify() -> None:
    seen: list[LedgerRecord] = []
    ledger = Ledger()
    unsubscribe = ledger.subscribe(seen.append)
    record = ledger.add(
        LedgerRecord(kind="spill", ref="call_1", tool="bash", chars_before=80_000, chars_after=2_400,
                     recover="read /tmp/x.txt", detail={"path": "/tmp/x.txt"})
    )
    assert seen == [record]
    assert record.tokens_before == 20_000 and record.tokens_after == 600 and record.saved_tokens == 19_400
    assert LedgerRecord.from_json_dict(record.to_json_dict()) == record
    assert record.describe() == "spill bash [call_1]: 20,000 -> 600 tokens; read /tmp/x.txt"
    unsubscribe()
    ledger.add(LedgerRecord(kind="prune", chars_before=4_000, chars_after=400))
    assert len(seen) == 1
    assert ledger.totals() == {"spill": 19_400, "prune": 900}
