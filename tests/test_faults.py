"""What a user's situation makes go wrong once a run has started ends in one line on stderr, with
nothing lost: a full disk (a real tmpfs of 1 MiB), a truncated checkpoint, a misspelt Trainer
option; and the faults at the edges of a run's life: a run that diverges, a plugin that raises,
a best checkpoint left by an earlier attempt; all through src/train.py."""

import json
import os
import pathlib
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from helpers.configs import composed
from helpers.paths import CONF, ROOT
from helpers.presets import QUICK, quick
from helpers.results import read_json
from helpers.runs import run_once, train_py
from hydra.core.utils import JobReturn, JobStatus

from hydra_plugins.longterm_launcher import parallel_launcher, submitit_packed
from longterm.analysis.events import scalars
from longterm.config.command_line import check
from longterm.config.run_settings import job_run_dir
from longterm.config.validate import ConfigError
from longterm.store.archive import main as archive_main
from longterm.store.archive import put
from longterm.store.checkpoint_files import relocate
from longterm.store.continue_run import main as continue_main
from longterm.store.run_dir import claim
from longterm.sweeps.failures import Failures
from longterm.sweeps.multirun import job_rows

PLUGINS = {"PYTHONPATH": str(Path(__file__).resolve().parent / "plugins")}  # faulty.py


def faulty(encoder: str, after: int = 20) -> list[str]:
    """The paper's model with tests/plugins/faulty.py's `encoder`, failing at training pass
    `after + 1` (QUICK: the first update of epoch 2)."""
    name = encoder.lower()
    return [f"model.encoder=faulty.{encoder}", f"model.name={name}", f"+model.after={after}"]


def error_line(stderr: str) -> str:
    """The one line a failed command ends with; no traceback before it."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert lines and lines[-1].startswith("error: "), stderr
    return lines[-1]


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only), unmounted after the test."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)])
    if done.returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """A QUICK run never stopped: what a resumed one must end as."""
    return run_once(tmp_path_factory, "reference", *QUICK)


def history(run_dir: Path) -> list[float]:
    return read_json(run_dir / "result.json")["val_acc_history"]


# A checkpoint of the paper's model with its Adam state (about 140 kB), and room for the first
# epoch's files beside two of them: the first epoch fits, the second epoch's checkpoint does not.
CHECKPOINT = 140_000
ROOM = 2 * CHECKPOINT + 60_000


def fill(disk: Path, leave: int) -> Path:
    """Write zeros into `disk` until `leave` bytes are free."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    filler.write_bytes(b"\0" * (free - leave))
    return filler


def test_a_full_disk_keeps_the_last_checkpoint_and_the_same_command_resumes(small_disk, reference):
    """The disk fills at the second epoch's checkpoint: one line, the first epoch's last.ckpt
    whole, no temporary file left; once space is freed, the same command ends as a run never
    stopped."""
    run_dir = small_disk / "run"
    args = [*QUICK, f"hydra.run.dir={run_dir}"]
    filler = fill(small_disk, ROOM)
    out = train_py(*args)
    line = error_line(out.stderr)
    assert out.returncode == 1
    ckpt = run_dir / "checkpoints" / "last.ckpt"
    assert line.startswith(f"error: cannot write {run_dir / 'checkpoints'}/")
    assert line.endswith(
        ".ckpt: No space left on device; free some space, then rerun the same command: it "
        f"resumes from {ckpt}"
    )
    assert torch.load(ckpt, map_location="cpu", weights_only=False)["global_step"] == 20
    leftovers = [p for p in run_dir.rglob("*") if p.is_file() and ".tmp" in p.name]
    assert not leftovers
    assert read_json(run_dir / "result.json")["status"] == "failed"  # written: it is small

    filler.unlink()
    out = train_py(*args)
    assert out.returncode == 0, out.stderr
    again = read_json(run_dir / "result.json")
    assert again["status"] == "max_epochs" and again["resumed_at_update"] == 20
    assert again["val_acc_history"] == history(reference)


def test_an_unreadable_checkpoint_is_kept_and_the_run_resumes_from_the_best(tmp_path, reference):
    """A truncated last.ckpt: kept beside as last.ckpt.unreadable, the run goes on from
    best.ckpt to the result it had; with no readable checkpoint, one line says what to do."""
    shutil.copytree(reference, tmp_path, dirs_exist_ok=True)
    for ckpt in (tmp_path / "checkpoints").glob("*.ckpt"):
        relocate(ckpt, ckpt, tmp_path)  # its callbacks' paths, as continue_run moves them
    (tmp_path / "result.json").unlink()  # as if killed after its last epoch's checkpoint
    args = [*QUICK, f"hydra.run.dir={tmp_path}"]
    last = tmp_path / "checkpoints" / "last.ckpt"
    truncated = last.read_bytes()[:1000]
    last.write_bytes(truncated)

    out = train_py(*args)
    assert out.returncode == 0, out.stderr
    assert "last.ckpt cannot be read (PytorchStreamReader failed" in out.stdout
    assert (tmp_path / "checkpoints" / "last.ckpt.unreadable").read_bytes() == truncated
    assert history(tmp_path) == history(reference)

    (tmp_path / "result.json").unlink()
    for name in ("last.ckpt", "best.ckpt"):
        (tmp_path / "checkpoints" / name).write_bytes(truncated)
    out = train_py(*args)
    assert out.returncode == 1
    folder = tmp_path / "checkpoints"
    assert error_line(out.stderr) == (
        f"error: {last} cannot be read (PytorchStreamReader failed reading zip archive: failed "
        "finding central directory), and no other checkpoint of the run can: to start the run "
        f"again, move them away (mv {folder} {folder}.unreadable) and rerun the same command"
    )
    assert last.read_bytes() == truncated  # never deleted


@pytest.mark.parametrize(
    "args, expected",
    [
        (
            ["+trainer.max_epoch=5"],
            "trainer.max_epoch is not an argument of Lightning's Trainer: did you mean "
            "trainer.max_epochs?",
        ),
        (["+trainer.speed=2"], "trainer.speed is not an argument of Lightning's Trainer"),
    ],
)
def test_a_misspelt_trainer_option_is_one_line_before_training(args, expected):
    with pytest.raises(ConfigError) as err:
        check(args, CONF)
    assert str(err.value).startswith(expected)


def finite(path: Path) -> bool:
    state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
    return all(bool(torch.isfinite(v).all()) for v in state.values() if v.is_floating_point())


def test_a_run_that_diverges_keeps_what_it_measured_before(tmp_path):
    """Its loss turns NaN at the first update of epoch 2: diverged there, the accuracy of epoch 1
    kept (the NaN weights are not validated), and the checkpoints hold epoch 1's finite weights."""
    run_dir = tmp_path / "run"
    out = train_py(
        *quick("trainer.max_epochs=3"), *faulty("TurnsNaN"), f"hydra.run.dir={run_dir}", env=PLUGINS
    )
    assert out.returncode == 0, out.stderr
    result = read_json(run_dir / "result.json")
    assert (result["status"], result["diverged_step"], result["epochs"]) == ("diverged", 21, 2)
    (acc,) = result["val_acc_history"]
    assert result["final_acc"] == result["best_acc"] == acc > 0
    for name in ("best.ckpt", "last.ckpt"):
        ckpt = run_dir / "checkpoints" / name
        assert finite(ckpt), name
        assert torch.load(ckpt, weights_only=True)["global_step"] == 20
    assert [step for step, _ in scalars(run_dir)["val/acc"]] == [19]  # epoch 1's only


def test_a_run_started_again_beside_its_best_checkpoint_keeps_one_best(tmp_path, reference):
    """An attempt that wrote best.ckpt but never last.ckpt (a full disk, a kill between the two
    writes): the rerun resumes from best.ckpt, which stays the best of the run (no best-v1.ckpt),
    and result.json names it."""
    shutil.copytree(reference, tmp_path, dirs_exist_ok=True)
    for ckpt in (tmp_path / "checkpoints").glob("*.ckpt"):
        relocate(ckpt, ckpt, tmp_path)  # its callbacks' paths, as continue_run moves them
    (tmp_path / "result.json").unlink()
    (tmp_path / "checkpoints" / "last.ckpt").unlink()
    best = torch.load(tmp_path / "checkpoints" / "best.ckpt", weights_only=True)["global_step"]
    out = train_py(*QUICK, f"hydra.run.dir={tmp_path}")
    assert out.returncode == 0, out.stderr
    assert "last.ckpt is missing: resuming from" in out.stdout
    result = read_json(tmp_path / "result.json")
    assert result["resumed_at_update"] == best
    assert result["val_acc_history"] == history(reference)
    assert result["best_checkpoint"] == "checkpoints/best.ckpt"
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == [
        "best.ckpt",
        "last.ckpt",
    ]
    kept = torch.load(tmp_path / "checkpoints" / "best.ckpt", weights_only=True)["callbacks"]
    (score,) = [v["best_model_score"] for k, v in kept.items() if "val/acc" in k]
    assert float(score) == result["best_acc"]


def refusal(call, *args: str) -> str:
    """The one line a command-line entry point (`main(argv)`) exits with."""
    with pytest.raises(SystemExit) as stopped:
        call(list(args))
    assert isinstance(stopped.value.code, str), stopped.value.code
    return stopped.value.code


def test_continue_run_refuses_a_run_in_use_or_unfinished_in_one_line(tmp_path, reference):
    """longterm.store.continue_run on a run still training (its lock held, no result.json yet),
    stopped before its end, or interrupted: one line, and nothing written."""
    old, new = tmp_path / "old", tmp_path / "new"
    shutil.copytree(reference, old)
    (old / "result.json").unlink()
    with claim(old):  # as the process training it holds it
        line = refusal(continue_main, str(old), str(new))
    assert line == (
        f"error: {old} is in use by pid {os.getpid()} on {socket.gethostname()}: wait for it to "
        "end, then continue it"
    )
    line = refusal(continue_main, str(old), str(new))
    assert line == (
        f"error: {old} holds no finished run (no result.json: stopped before it ended): rerun "
        "its own command to finish it"
    )
    (old / "result.json").write_text('{"status": "interrupted"}')
    line = refusal(continue_main, str(old), str(new))
    assert line == f"error: {old} has status 'interrupted': rerun its own command to resume it"
    assert not new.exists()


class Payload:
    """Unpickled, it would create the file `marker`: what a malicious checkpoint carries."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (pathlib.Path(self.marker),))


def test_a_checkpoint_that_would_run_code_is_refused_in_one_line(tmp_path, reference, capsys):
    """A last.ckpt carrying a pickled callable: resuming the run, continue_run and the archive
    each refuse it in one line naming the file, and the callable never runs."""
    marker = tmp_path / "ran"
    run_dir = tmp_path / "sweep" / "run"
    shutil.copytree(reference, run_dir)
    last = run_dir / "checkpoints" / "last.ckpt"
    state = torch.load(last, weights_only=True)
    state["callbacks"]["extra"] = Payload(marker)
    torch.save(state, last)
    refused = (
        f"{last} is refused: it holds a pickled getattr, which loading would run, and no "
        "checkpoint written here holds such a thing; nothing in it was run: remove it, or put "
        "the run's own checkpoint in its place"
    )
    line = refusal(continue_main, str(run_dir), str(tmp_path / "longer"))
    assert line == f"error: {refused}"
    put([run_dir.parent], tmp_path / "runs")  # copies files, loads none
    assert archive_main(["get", str(tmp_path / "runs" / "sweep"), "--into", str(tmp_path / "out")])
    archived = tmp_path / "runs" / "sweep" / "run" / "checkpoints" / "last.ckpt"
    assert capsys.readouterr().err == f"archive: {refused.replace(str(last), str(archived))}\n"
    (run_dir / "result.json").unlink()  # unfinished: the same command resumes from last.ckpt
    out = train_py(*QUICK, f"hydra.run.dir={run_dir}")
    assert out.returncode == 1
    assert error_line(out.stderr) == f"error: {refused}"
    assert not marker.exists()


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_a_run_directory_refuses_other_settings_before_anything_is_written(tmp_path, reference):
    """A command with another lr pointed at a run's directory, finished, interrupted or stopped
    before its result: refused in one line before Hydra starts, so its .hydra/ still describes
    the run it holds; the same settings pass. In a sweep, each job's directory is checked."""
    run_dir = tmp_path / "run"
    shutil.copytree(reference, run_dir)
    before = files(run_dir)
    out = train_py(*QUICK, "lr=1e-2", f"hydra.run.dir={run_dir}")
    assert out.returncode == 1
    assert error_line(out.stderr) == (
        f"error: {run_dir} holds a finished run with other settings (lr=0.001): give this run "
        "another directory"
    )
    assert files(run_dir) == before  # .hydra/config.yaml and overrides.yaml too
    other = [*QUICK, "lr=1e-2", f"hydra.run.dir={run_dir}"]
    check([*QUICK, f"hydra.run.dir={run_dir}"], CONF)  # its own settings: resumes
    result = read_json(run_dir / "result.json")
    (run_dir / "result.json").write_text(json.dumps({**result, "status": "interrupted"}))
    with pytest.raises(ConfigError) as refused:
        check(other, CONF)
    assert str(refused.value) == (
        f"{run_dir} holds an interrupted run with other settings (lr=0.001): rerun it with its "
        "own settings to resume it, or give this run another directory"
    )
    (run_dir / "result.json").unlink()  # killed before its result: .hydra/config.yaml says
    with pytest.raises(ConfigError, match=r"holds an unfinished run with other settings \(lr="):
        check(other, CONF)
    sweep = tmp_path / "sweep"
    job = composed(*QUICK, "lr=1e-2", f"hydra.sweep.dir={sweep}", with_hydra=True)
    shutil.copytree(run_dir, job_run_dir(job, multirun=True))
    with pytest.raises(ConfigError, match=r"lr1e-2-s0,.* holds an unfinished run with other"):
        check(["-m", *QUICK, "lr=1e-3,1e-2", f"hydra.sweep.dir={sweep}"], CONF)


def test_a_plugin_that_raises_fails_its_runs_keeps_the_traceback_and_the_sweep_ends(tmp_path):
    """An encoder that raises at its sixth training pass (launcher=local), and a task generator
    that raises in mid-epoch inside a pack (launcher=packed): each such run is recorded failed
    with the error, its traceback kept in its train.log, the other jobs finish, and the sweep
    ends with its table and its line."""
    local, packed = tmp_path / "local", tmp_path / "packed"
    one_epoch = quick("trainer.max_epochs=1")
    encoder = [*faulty("Raises")[:-1], "+model.after=5,1000"]
    task = ["task.generator=faulty.addition_until", "task.name=until", "+task.params.after=12,1000"]
    cases = [
        (local, [*encoder, *one_epoch], "RuntimeError: the plugin failed at training pass 6", 1),
        (
            packed,
            ["launcher=packed", "launcher.jobs=1", "lr=1e-3,3e-3", *task, *one_epoch],
            "RuntimeError: the task plugin failed at batch 13",
            2,
        ),
    ]
    for sweep, args, message, failed in cases:
        out = train_py("-m", *args, f"hydra.sweep.dir={sweep}", env=PLUGINS)
        assert out.returncode == 1
        lines = out.stderr.strip().splitlines()
        assert lines[-1].startswith(
            f"error: {failed} job(s) of the sweep stopped; each said why above; resume them with: "
        )
        assert lines[-1].endswith(f" hydra.sweep.dir={sweep}")
        stopped = [line for line in lines if line.startswith("error: ") and message in line]
        assert len(stopped) == failed, out.stderr
        assert all(
            line.endswith(f"failed: {message} (traceback in its train.log)") for line in stopped
        )
        assert f"{2 * failed} jobs in {sweep}" in out.stdout  # the closing table
        results = {p.parent: read_json(p) for p in sweep.glob("*/result.json")}
        statuses = sorted(r["status"] for r in results.values())
        assert statuses == ["failed"] * failed + ["max_epochs"] * failed
        for run_dir, result in results.items():
            if result["status"] == "failed":
                assert result["error"] == message
                log = (run_dir / "train.log").read_text()
                assert "Traceback (most recent call last)" in log and message in log


def test_a_run_that_fails_in_a_submitit_job_fails_the_sweep(tmp_path):
    """launcher=submitit_local (launcher=slurm's path): the encoder and the task generator of the
    test above raise in a run's own submitit job and in a pack's (launcher.members=auto). Each
    job's terminal is its submitit log; its lines come back with its JobReturns, and the sweep
    says them, ends with its table and exits 1, as under launcher=local; the other jobs finish."""
    single, packs = tmp_path / "single", tmp_path / "packs"
    one_epoch = quick("trainer.max_epochs=1")
    encoder = [*faulty("Raises")[:-1], "+model.after=5,1000"]
    task = ["task.generator=faulty.addition_until", "task.name=until", "+task.params.after=12,1000"]
    cases = [
        (single, [*encoder, *one_epoch], "RuntimeError: the plugin failed at training pass 6", 1),
        (
            packs,
            ["launcher.members=auto", "lr=1e-3,3e-3", *task, *one_epoch],
            "RuntimeError: the task plugin failed at batch 13",
            2,
        ),
    ]
    for sweep, args, message, failed in cases:
        args = ["-m", "launcher=submitit_local", *args, f"hydra.sweep.dir={sweep}"]
        out = train_py(*args, env=PLUGINS)
        assert out.returncode == 1, out.stderr
        lines = out.stderr.strip().splitlines()
        assert lines[-1] == (
            f"error: {failed} job(s) of the sweep stopped; each said why above; resume them with: "
            f"{shlex.join(['python', str(ROOT / 'src' / 'train.py'), *args])}"
        )
        stopped = [line for line in lines if line.startswith("error: ") and message in line]
        assert len(stopped) == failed, out.stderr
        assert all(
            line.endswith(f"failed: {message} (traceback in its train.log)") for line in stopped
        )
        assert f"{2 * failed} jobs in {sweep}" in out.stdout  # the closing table
        statuses = sorted(read_json(p)["status"] for p in sweep.glob("*/result.json"))
        assert statuses == ["failed"] * failed + ["max_epochs"] * failed


def test_a_submitit_jobs_lines_and_what_its_task_raised_are_said_where_the_sweep_runs(
    monkeypatch, capsys
):
    """What a single run's submitit job returns (its JobReturn and its lines), in the launching
    process: its lines said and counted; a task that raised past src/train.py (HYDRA_FULL_ERROR=1)
    said in one line under the job's label, counted, and its JobReturn completed with no value,
    as under launcher=parallel, so that the sweep still ends with its table."""
    failures = Failures()
    for module in (submitit_packed, parallel_launcher):  # names read from the modules when used
        monkeypatch.setattr(module, "FAILURES", failures)
    done = JobReturn(overrides=["seed=1"], status=JobStatus.COMPLETED)
    done.return_value = 0.5
    raised = JobReturn(overrides=["seed=2"], status=JobStatus.FAILED)
    raised.return_value = RuntimeError("the task failed\nat its second line")
    assert submitit_packed.told((done, ["a run stopped"]), "job #0 (seed=1)") is done
    ret = submitit_packed.told((raised, []), "job #1 (seed=2)")
    assert ret.status == JobStatus.COMPLETED and ret.return_value is None
    assert failures.since(0) == [
        "a run stopped",
        "job #1 (seed=2) failed: RuntimeError: the task failed",
    ]
    said = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert said == [f"error: {line}" for line in failures.since(0)]


def test_a_record_cut_short_or_a_model_of_other_shapes_is_one_line(tmp_path, reference):
    """A result.json that is not whole JSON: the command line, continue_run and a sweep's table
    say so in one line; a command of another model.dim in an unfinished run's directory is refused
    in one line (the run's settings), never reaching Lightning's size-mismatch traceback."""
    run_dir = tmp_path / "sweep" / "run"
    shutil.copytree(reference, run_dir)
    (run_dir / "result.json").write_text('{"status": ')
    unreadable = (
        f"{run_dir / 'result.json'} cannot be read (Expecting value: line 1 column 12 (char 11)): "
        "move it away, and the same command resumes the run from its last checkpoint"
    )
    with pytest.raises(ConfigError) as refused:
        check([*QUICK, f"hydra.run.dir={run_dir}"], CONF)
    assert str(refused.value) == unreadable
    assert refusal(continue_main, str(run_dir), str(tmp_path / "new")) == f"error: {unreadable}"
    assert [row["status"] for row in job_rows(run_dir.parent)] == ["unreadable result.json"]
    (run_dir / "result.json").unlink()
    out = train_py(*QUICK, "model.dim=32", f"hydra.run.dir={run_dir}")
    assert out.returncode == 1
    assert error_line(out.stderr) == (  # model.dim is a setting: the directory's check says so
        f"error: {run_dir} holds an unfinished run with other settings (dim=100): rerun it with "
        "its own settings to resume it, or give this run another directory"
    )


def test_a_checkpoint_of_other_shapes_is_refused_in_one_line(tmp_path):
    """training/checkpoints.py: same_model, the last guard before Lightning's size-mismatch
    traceback (a checkpoint whose shapes no recorded setting explains)."""
    from longterm.training.checkpoints import same_model
    from longterm.training.faults import RunError
    from longterm.training.parts import build_model

    ckpt = tmp_path / "last.ckpt"
    torch.save({"state_dict": build_model(composed("model.dim=100")).state_dict()}, ckpt)
    same_model(build_model(composed("model.dim=100")), ckpt)  # the same shapes: no error
    with pytest.raises(RunError) as refused:
        same_model(build_model(composed("model.dim=32")), ckpt)
    assert str(refused.value) == (
        f"{ckpt} holds a model of other parameters than this command's (net.encoder.proj.bias: "
        "100 there, 32 here): rerun the run with its own settings, or give this run another "
        "directory"
    )


def test_the_resume_command_is_the_command_as_typed_in_the_runs_directory():
    """The command line as typed, quoted for the shell, with the directory given once, last, and
    quoted for Hydra where it would read otherwise (a comma: a sweep)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from longterm.training.faults import resume_command

    argv = ["src/train.py", "hydra.run.dir=old", "eval.lengths=[60, 80]", "+hydra.run.dir=x"]
    command = shlex.split(resume_command(argv, "hydra.run.dir", "/runs/a,b"))
    assert command[:-1] == ["python", "src/train.py", "eval.lengths=[60, 80]"]
    (override,) = OverridesParser.create().parse_overrides(command[-1:])
    assert (override.key_or_group, override.value()) == ("hydra.run.dir", "/runs/a,b")
    plain = resume_command(["src/train.py", "-m", "lr=1e-3,3e-3"], "hydra.sweep.dir", "out/s_1")
    assert plain == "python src/train.py -m lr=1e-3,3e-3 hydra.sweep.dir=out/s_1"


def test_ctrl_c_in_a_run_says_interrupted_in_one_line(tmp_path):
    """Lightning ends a run on Ctrl-C with sys.exit(1) after its KeyboardInterrupt: recorded as
    interrupted, and the process says so in one line, as on SIGTERM."""
    from longterm.training.result import record_failure

    result = {"run_dir": str(tmp_path), "status": "failed"}
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            sys.exit(1)  # what Lightning's _call_and_handle_interrupt does
    except SystemExit as lightning_exit:
        with pytest.raises(SystemExit) as said:
            record_failure(result, {}, lightning_exit, 1.0, ended=lambda _: None)
    assert said.value.code == f"interrupted: {tmp_path / 'result.json'}"
    assert read_json(tmp_path / "result.json")["status"] == "interrupted"
