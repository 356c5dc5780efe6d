"""The bottleneck protocol's numbers, pinned within tolerances that a few hundred trials allow."""

import pandas as pd
import pytest

from longterm.experiments.bottleneck import page
from longterm.experiments.bottleneck.measure import measure, predicted_recall
from longterm.experiments.bottleneck.page import OUT

TRIALS = 600  # standard error of a rate p: sqrt(p(1-p)/600) <= 0.021


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return measure(trials=TRIALS, seed=1, n_unseen=300)


def recall(df: pd.DataFrame, memory: str, d: int, lam: float | None, distance: int) -> float:
    rows = df[(df.memory == memory) & (df.d == d) & (df.distance == distance)]
    return float((rows[rows["lambda"] == lam] if lam else rows).recall.iloc[0])


@pytest.mark.parametrize(
    "d, lam, distance, published, tolerance",
    [
        (32, 0.8, 1, 0.47, 0.07),
        (32, 0.8, 16, 0.0, 0.01),
        (128, 0.8, 8, 0.05, 0.03),
        (32, 0.95, 1, 0.13, 0.05),
    ],
)
def test_state_recall_reproduces_the_published_values(df, d, lam, distance, published, tolerance):
    assert abs(recall(df, "state", d, lam, distance) - published) <= tolerance


def test_d32_distance_8_stays_well_below_the_published_five_percent(df):
    measured = recall(df, "state", 32, 0.8, 8)
    assert measured < 0.035 and abs(measured - predicted_recall(32, 0.8, 8)) < 0.015


def test_state_recall_follows_the_gaussian_prediction(df):
    state = df[df.memory == "state"]
    assert (state.recall - state.predicted).abs().max() < 0.08
    for (_, _), group in state.groupby(["d", "lambda"]):  # fading with distance
        assert group.recall.iloc[:5].mean() > group.recall.iloc[-5:].mean()


def test_attention_recalls_every_distance_alike(df):
    att128 = df[(df.memory == "attention") & (df.d == 128)]
    assert att128.recall.min() >= 0.99
    att32 = df[(df.memory == "attention") & (df.d == 32)]
    assert att32.recall.min() > 0.85 and att32.recall.max() - att32.recall.min() < 0.08


def test_false_alarm_rate_is_the_gaussian_tail_for_the_state(df):
    state = df[df.memory == "state"]
    assert state.false_alarms.between(0.0015, 0.0040).all()  # P(N(0,1) > 2.8) = 0.0026


def test_command_writes_table_csv_and_plot(tmp_path):
    page.main(["--trials", "50", "--seed", "3", "--unseen", "50", "--out", str(tmp_path)])
    table = pd.read_csv(tmp_path / "recall.csv")
    assert len(table) == 6 * 40 and set(table.memory) == {"state", "attention"}
    text = (tmp_path / "README.md").read_text()
    assert "50 trials per memory, seed 3" in text
    assert "python -m longterm.experiments.bottleneck.page --trials 50 --seed 3" in text
    assert (tmp_path / "recall.png").read_bytes()[:4] == b"\x89PNG"


def test_committed_figures_match_the_protocol():
    table = pd.read_csv(OUT / "recall.csv")
    state = table[table.memory == "state"]
    assert (state.recall - state.predicted).abs().max() < 0.06  # the approximation at d=32, k=0
    assert (OUT / "recall.png").exists() and "trials per memory" in (OUT / "README.md").read_text()
