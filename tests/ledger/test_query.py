"""The ledger's query helpers: exact money, nearest-rank percentiles."""

from __future__ import annotations

from zarniwoop.ledger import percentile, usd_total


def test_money_is_summed_exactly_to_the_micro_dollar():
    assert sum([0.1, 0.2]) != 0.3  # what a float sum gives
    assert usd_total([0.1, 0.2]) == 0.3
    assert usd_total([0.0000015, 0.0000015, None]) == 0.000003  # unpriced calls add nothing
    assert usd_total([]) == 0.0
    assert usd_total([0.1] * 10) == 1.0


def test_percentile_is_nearest_rank():
    assert (percentile([10, 20, 30, 40], 0.5), percentile([10, 20, 30, 40], 0.95)) == (20, 40)
    assert percentile([], 0.5) is None
