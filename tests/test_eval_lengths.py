"""A run scored at other lengths (training/eval_lengths.py): at the end of its training, and once
finished, at new lengths from its last checkpoint, by a rerun of its command with more
eval.lengths or by `python -m longterm.analysis.evaluate RUN --lengths ...`; the same numbers
either way, recorded beside the others and said in one line."""

import pytest
from helpers.presets import QUICK
from helpers.results import read_json
from helpers.runs import train_py

from longterm.analysis.evaluate import main as evaluate

SCORED = ["eval.sequences=40"]


@pytest.fixture(scope="module")
def scored_in_training(tmp_path_factory):
    """A run scored at T0 = 60 and 80 when its training ended; its directory and stdout."""
    run_dir = tmp_path_factory.mktemp("scored")
    out = train_py(*QUICK, *SCORED, "eval.lengths=[60,80]", f"hydra.run.dir={run_dir}")
    assert out.returncode == 0, out.stderr
    return run_dir, out.stdout


def test_a_run_ends_with_its_scores_at_eval_lengths_in_one_line(scored_in_training):
    run_dir, stdout = scored_in_training
    found = read_json(run_dir / "result.json")["eval_lengths"]
    line = (
        f"at lengths 60: {100 * found['60']:.1f}%, 80: {100 * found['80']:.1f}% (40 sequences each)"
    )
    assert line in stdout.splitlines()[-1], stdout


def test_a_finished_run_is_scored_at_new_lengths_as_its_training_would_have(
    tmp_path, scored_in_training, capsys
):
    """The same run without eval.lengths, then scored: by the evaluate command at 60 (the
    training's number, from the last checkpoint), by a rerun of its command with 80 and 100
    (60 not scored again), its other keys kept; more sequences than before are refused."""
    trained, _ = scored_in_training
    expected = read_json(trained / "result.json")["eval_lengths"]
    run_dir = tmp_path / "run"
    assert train_py(*QUICK, f"hydra.run.dir={run_dir}").returncode == 0
    before = read_json(run_dir / "result.json")

    evaluate([str(run_dir), "--lengths", "60", "--sequences", "40"])
    assert (
        capsys.readouterr().out
        == f"at lengths 60: {100 * expected['60']:.1f}% (40 sequences each)\n"
    )
    after = read_json(run_dir / "result.json")
    assert after == {**before, "eval_lengths": {"60": expected["60"]}, "eval_sequences": 40}

    again = train_py(*QUICK, *SCORED, "eval.lengths=[60,80,100]", f"hydra.run.dir={run_dir}")
    assert again.returncode == 0, again.stderr
    assert "already max_epochs, not trained again" in again.stdout
    found = read_json(run_dir / "result.json")["eval_lengths"]
    assert found["60"] == expected["60"] and found["80"] == expected["80"]
    assert list(found) == ["100", "60", "80"]  # result.json's keys are sorted
    assert (
        again.stdout.strip()
        .splitlines()[-1]
        .endswith(
            f"at lengths 60: {100 * found['60']:.1f}%, 80: {100 * found['80']:.1f}%, "
            f"100: {100 * found['100']:.1f}% (40 sequences each)"
        )
    )

    with pytest.raises(SystemExit) as refused:
        evaluate([str(run_dir), "--lengths", "120", "--sequences", "9"])
    assert refused.value.code == (
        f"error: {run_dir / 'result.json'} has eval_lengths scored on 40 sequences each: score "
        "120 on as many (--sequences 40)"
    )


def test_a_run_that_has_not_finished_is_not_scored(tmp_path):
    (tmp_path / "result.json").write_text('{"status": "interrupted"}')
    with pytest.raises(SystemExit) as refused:
        evaluate([str(tmp_path), "--lengths", "60"])
    assert refused.value.code == (
        f"error: {tmp_path / 'result.json'} has status 'interrupted': finish the run first (its "
        "own command resumes it), then score it at new lengths"
    )
