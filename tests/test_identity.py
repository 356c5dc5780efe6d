"""A page's point is one setting (longterm.analysis.identity): what a learning-rate race varies
within it (rates, seeds, its rivals' capped epoch limits) passes, any other difference is refused
in one line naming it. The pages' own tests refuse mixes of real records; these the rule's
cases."""

import pandas as pd
import pytest

from longterm.analysis.identity import MixedSettingsError, one_setting


def run(lr: float, seed: int, limit: int, solved_at: int | None = None, **more) -> dict:
    """A run of addition at T0 = 50 as analysis/runs.py reads it: its columns and settings."""
    settings = {"task": "addition", "T0": 50, "lr": lr, "seed": seed, "max_epochs": limit}
    return {
        **{"task": "addition", "T0": 50, "lr": lr, "seed": seed, "max_epochs": limit},
        **{"status": "solved" if solved_at else "max_epochs", "epoch_solved": solved_at},
        **{"updates": 1000 * (solved_at or limit), "resumed_at_update": more.pop("resumed", None)},
        "settings": settings | more,
    }


def refused(*runs: dict, within=("lr", "seed")) -> str | None:
    try:
        one_setting(pd.DataFrame(runs), ["task", "T0"], within)
    except MixedSettingsError as e:
        return str(e)
    return None


def test_a_races_rivals_capped_where_their_leader_solved_are_one_point():
    """Seed 1's leader solved at epoch 3 and its rival ran 3; seed 2's leader did not solve and
    its rival ran the whole limit."""
    race = [run(3e-3, 1, 100, 3), run(1e-3, 1, 3), run(3e-3, 2, 100), run(1e-3, 2, 100)]
    assert refused(*race) is None


def test_a_run_continued_to_a_larger_limit_is_one_run_with_its_start():
    """store/continue_run.py: the run at 50 epochs, continued to 100 (resumed at its 50,000
    updates), beside a seed run at 100 from the start."""
    start, longer = run(3e-3, 1, 50), run(3e-3, 1, 100, resumed=50_000)
    assert refused(start, longer, run(3e-3, 2, 100)) is None


def test_a_smaller_limit_that_no_leader_explains_is_another_budget():
    """A rival below the race's limit where no other rate solved, a seed raced at another
    limit, and a run of another setting are refused, each named; a key a record lacks (made
    before the key existed) is not held against it."""
    line = refused(run(3e-3, 1, 100, 3), run(1e-3, 1, 5))
    assert line.startswith("runs of other settings in one point (task=addition, T0=50) differ in ")
    assert "max_epochs: 5, 100:" in line and "\n" not in line
    assert "max_epochs: 50, 100" in refused(run(3e-3, 1, 100, 3), run(3e-3, 2, 50, 3))
    assert "vocab: 16, 64" in refused(run(3e-3, 1, 100, vocab=16), run(3e-3, 2, 100, vocab=64))
    assert refused(run(3e-3, 1, 100, vocab=16), run(3e-3, 2, 100)) is None


def test_without_a_race_the_learning_rate_and_the_limit_are_the_points_own():
    """A page whose point is its seeds only (within: seed): two rates, or a capped limit, are
    two settings; a table made without records (no settings) has nothing to compare."""
    assert "lr: 0.001, 0.003" in refused(run(3e-3, 1, 5), run(1e-3, 2, 5), within=("seed",))
    capped = [run(3e-3, 1, 100, 3), run(1e-3, 1, 3)]
    assert "max_epochs: 3, 100" in refused(*capped, within=("seed",))
    one_setting(pd.DataFrame(capped).drop(columns="settings"), ["task"], ())


@pytest.mark.parametrize("within", [("lr", "seed"), ("seed",), ()])
def test_no_runs_no_point(within):
    one_setting(pd.DataFrame(), ["task"], within)
