"""The checks pages' one rule of what runs can show (longterm.analysis.plateau), on made-up
histories and seeds."""

from longterm.analysis.plateau import Cell, judged, rise


def test_a_runs_rise_is_its_last_two_epochs_best_over_its_best_before():
    assert rise([0.1, 0.2, 0.25, 0.4]) == 0.4 - 0.2
    assert rise([0.1, 0.5, 0.4, 0.45]) == 0.0  # below its best before: at a plateau
    assert rise([0.1, 0.2, 0.9, 1.0], status="solved") == 0.0  # stopped because it solved
    assert rise([0.1, 0.9]) == 0.0  # too short to tell
    assert rise(None) == 0.0


def test_a_verdict_stands_on_three_agreeing_seeds_at_a_plateau():
    good = Cell("a", (0.5, 0.505, 0.51), (0.0, 0.0, 0.0), 2000)
    assert judged("holds", "why", [good]) == ("holds", "why")
    assert judged("does not hold", "why", [good]) == ("does not hold", "why")
    two = Cell("b", (0.5, 0.5), (0.0, 0.0), 2000)
    kind, why = judged("holds", "why", [good, two])
    assert kind == "inconclusive" and "1 with fewer than 3 seeds (2: b)" in why
    split = Cell("c", (0.957, 0.997, 0.394), (0.0, 0.0, 0.0), 2000)
    kind, why = judged("does not hold", "why", [split])
    assert kind == "inconclusive" and "c 95.7 / 99.7 / 39.4" in why
    assert judged("does not hold", "why", [split], agree=False)[0] == "does not hold"
    rising = Cell("d", (0.25, 0.25, 0.25), (0.0, 0.03, 0.0), 2000)
    kind, why = judged("does not hold", "why", [good, rising])
    assert kind == "not reproduced within 2,000 updates"
    assert "1 still rising at 2,000 updates" in why and "d +0.0 / +3.0 / +0.0" in why
    assert judged("holds", "why", [rising])[0] == "inconclusive"
    assert judged("not tested here", "why", [rising]) == ("not tested here", "why")
