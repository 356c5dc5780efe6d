"""Where the paper's run falls among our seeds (longterm.analysis.paper_position): the sentence's
parts on made-up seeds, and a cell built from seeds as the collector passes them."""

import pandas as pd

from longterm.analysis.paper_position import (
    largest_fall,
    movers,
    plateau,
    positions_markdown,
    table1_positions,
    where,
)
from longterm.analysis.published import PROTOCOL


def test_inside_or_on_which_side_of_our_range():
    assert where(3, [2, 3, 5], fewer_is_better=True) == "inside our range (2–5, 3 seeds)"
    assert where(15, [17], fewer_is_better=True).startswith("better than every seed of ours (17")
    assert where(4, [3, 3, 3], fewer_is_better=True) == "worse than every seed of ours (3, 3 seeds)"
    assert where(0.898, [0.626], fewer_is_better=False).startswith("better than every seed")
    assert where(0.5, [0.6, 0.7], fewer_is_better=False).startswith("worse than every seed")


def test_plateau_falls_and_what_moves_the_seeds():
    assert plateau([0.1, 0.2, 0.6, 1.0]) == 2 and plateau([0.9]) == 0 and plateau([0.1]) == 1
    assert abs(largest_fall([0.2, 0.9, 0.4, 0.8]) - 0.5) < 1e-12 and largest_fall([1.0]) == 0.0
    assert movers([(3e-3,), (3e-3,)], [0, 1], [0.0]) == (
        "no learning-rate, plateau or swing differences"
    )
    said = movers([(3e-3,), (1e-2,)], [2, 5], [0.3])
    assert "differs between seeds (3e-03, 1e-02)" in said
    assert "a plateau of 2–5 epochs below 50%" in said and "swings of up to 30 points" in said


def test_a_cell_from_its_seeds():
    """Three seeds of addition with attention at T0 = 5000 (the paper: 2 epochs), each with its
    winning run's history; a cell run with 100 updates an epoch gets no row (no paper value)."""
    paper_protocol = (tuple(PROTOCOL.values()),)
    seeds = pd.DataFrame(
        {
            "task": ["addition"] * 4,
            "pool": ["attention"] * 4,
            "T0": [5000, 5000, 5000, 50],
            "seed": [1, 2, 3, 1],
            "solved": [True] * 4,
            "epochs": [5, 2, 3, 1],
            "acc": [1.0] * 4,
            "lrs": [(1e-3,), (3e-3,), (3e-3,), (3e-3,)],
            "n_lrs": [4] * 4,
            "run_dirs": [("a",), ("b",), ("c",), ("d",)],
            "protocols": [paper_protocol] * 3 + [((100, 1000),)],
        }
    )
    runs = pd.DataFrame(
        {
            "run_dir": ["a", "b", "c", "d"],
            "history": [[0.1, 0.2, 0.3, 0.9, 1.0], [0.6, 1.0], [0.1, 0.7, 1.0], [1.0]],
        }
    )
    t = table1_positions(seeds, runs)
    assert len(t) == 1
    cell = t.iloc[0]
    assert cell.ours == (5, 2, 3) and cell.paper == 2 and cell.measure == "epochs"
    assert cell.sentence.startswith("inside our range (2–5, 3 seeds); the best learning rate")
    assert "a plateau of 0–3 epochs below 50%" in cell.sentence
    text = positions_markdown(t, pd.DataFrame())
    assert "| addition | attention | 5000 | s1: 5, s2: 2, s3: 3 | 2 | inside" in text
