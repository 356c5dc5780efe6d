"""launcher=packed (longterm/sweeps/pack.py,
src/hydra_plugins/longterm_launcher/packed_launcher.py): runs of one cell trained as the members of
packs are, member for member, the same runs as under launcher=local: the same result.json numbers,
TensorBoard scalars, checkpoints (weights, Adam's state, the callbacks' states) and configs, on the
CPU to the bit."""

import math
import os
import signal

import pytest
import torch
from helpers.configs import composed
from helpers.hold import HOLD, has_received, is_held, release, unnamed
from helpers.paths import PLUGINS
from helpers.presets import QUICK, quick
from helpers.results import metrics, read_json, run_dirs
from helpers.runs import start, train_py, wait_for

from hydra_plugins.longterm_launcher.packed_launcher import cut, group_key, pack_size
from longterm.analysis.events import scalars
from longterm.models.ops import meta_batch, update_ops
from longterm.sweeps.pack_ops import pack_update_ops
from longterm.tasks import default_width
from longterm.training.parts import build_model


def test_jobs_that_differ_in_lr_seed_and_epoch_limit_share_a_pack():
    a = ["task=addition", "lr=1e-3", "seed=1", "trainer.max_epochs=3"]
    b = ["task=addition", "seed=2", "lr=3e-3"]
    assert group_key(a) == group_key(b) == ("task=addition",)
    assert group_key(["task=multiplication", "lr=1e-3"]) != group_key(a)


@pytest.mark.parametrize(
    ("members", "groups", "at_once", "size"),
    [
        ("auto", [list(range(8))], 2, 4),  # one cell on 2 CPUs: two packs of 4
        ("auto", [list(range(8))], 1, 8),  # one process at a time: one pack
        ("auto", [list(range(12))] * 24, 2, 12),  # Table 1's 24 cells: a pack per cell
        (3, [list(range(8))], 2, 3),
    ],
)
def test_the_pack_size(members, groups, at_once, size):
    assert pack_size(members, groups, at_once) == size


def test_packs_are_cut_even():
    assert cut(list(range(8)), 3) == [[0, 1], [2, 3, 4], [5, 6, 7]]
    assert cut(list(range(4)), 4) == [[0, 1, 2, 3]]


def job_dirs(sweep):
    return sorted(p for p in sweep.iterdir() if (p / ".hydra").is_dir())


def assert_same_runs(alone, packed, resumed=False, held=False):
    """Every run of `packed` equals the same run of `alone`: numbers, scalars, checkpoints
    (`held`: `packed`'s runs were held after their first epoch, helpers/hold.py, which only their
    configs show)."""
    names = [p.name for p in job_dirs(alone)]
    assert [p.name for p in job_dirs(packed)] == names
    for name in names:
        a, p = alone / name, packed / name
        assert metrics(p) == metrics(a), name
        same_scalars(scalars(a), scalars(p))
        for ckpt in ("last.ckpt", "best.ckpt"):
            pair = [x / "checkpoints" / ckpt for x in (a, p)]
            assert pair[0].exists() == pair[1].exists(), (name, ckpt)  # none of diverged weights
            if pair[0].exists():
                same_checkpoint(*pair, loops=not resumed)
        configs = [{**read_json(x / "result.json")["config"], "launcher": None} for x in (a, p)]
        if held:
            del configs[1]["callbacks"]["hold"]
        assert same(*configs, str(alone), str(packed))


def assert_close_runs(alone, stacked):
    """The stacked path (longterm.sweeps.stacked) against the runs alone: the same statuses, epochs
    and updates, accuracies within 0.01 and weights within 1e-3 (vmap's matrix products and the
    reference model's ops round otherwise than the fused kernels)."""
    for name in [p.name for p in job_dirs(alone)]:
        a, s = metrics(alone / name), metrics(stacked / name)
        assert [a[k] for k in ("status", "epochs", "updates")] == [
            s[k] for k in ("status", "epochs", "updates")
        ], name
        for x, y in zip(a["val_acc_history"], s["val_acc_history"], strict=True):
            assert abs(x - y) <= 0.01, name
        if a["status"] == "diverged":
            continue
        weights = [
            torch.load(
                d / name / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False
            )["state_dict"]
            for d in (alone, stacked)
        ]
        for k, v in weights[0].items():
            assert torch.allclose(v, weights[1][k], atol=1e-3), (name, k)


def same_scalars(a: dict, p: dict) -> None:
    """The same tags, steps and values (NaN equal to NaN)."""
    assert a.keys() == p.keys()
    for tag, points in a.items():
        assert [s for s, _ in points] == [s for s, _ in p[tag]], tag
        for (_, x), (_, y) in zip(points, p[tag], strict=True):
            assert x == y or (math.isnan(x) and math.isnan(y)), tag


def same_checkpoint(a, p, loops: bool) -> None:
    """Weights and Adam's state to the bit, the callbacks' states, and the loop's counters
    (`loops`; a resumed run's count the process that resumed it)."""
    ca, cp = (torch.load(x, map_location="cpu", weights_only=False) for x in (a, p))
    assert ca.keys() == cp.keys()
    assert (ca["epoch"], ca["global_step"]) == (cp["epoch"], cp["global_step"])
    for k, v in ca["state_dict"].items():
        assert torch.equal(v, cp["state_dict"][k]) or v.isnan().any(), k
    (oa,), (op,) = ca["optimizer_states"], cp["optimizer_states"]
    assert oa["param_groups"] == op["param_groups"]
    for i, state in oa["state"].items():
        for k, v in state.items():
            assert torch.equal(v, op["state"][i][k]) or v.isnan().any(), (i, k)
    here, there = str(a.parents[2]), str(p.parents[2])  # the sweep directories
    assert same(ca["callbacks"], cp["callbacks"], here, there)
    if loops:
        assert ca["loops"] == cp["loops"]


def same(x, y, here: str, there: str) -> bool:
    """Equal values, tensors to the bit (NaN equal to NaN), paths below the two sweeps alike."""
    if isinstance(x, dict):  # best_k_models is keyed by path
        xs = {k.replace(here, "") if isinstance(k, str) else k: v for k, v in x.items()}
        ys = {k.replace(there, "") if isinstance(k, str) else k: v for k, v in y.items()}
        return xs.keys() == ys.keys() and all(same(xs[k], ys[k], here, there) for k in xs)
    if isinstance(x, torch.Tensor):
        return torch.equal(x, y) or bool((x.isnan() & y.isnan()).all())
    if isinstance(x, str):
        return x.replace(here, "") == y.replace(there, "")
    return x == y


# 2 seeds x 2 learning rates, one of which diverges in mid-epoch (its update 2).
ATTENTION = ("task=addition", "pool=attention", "lr=1e-3,1e30", "seed=1,2")


def test_packed_members_are_their_runs_alone(tmp_path):
    """Attention pooling at a fixed length, a member that diverges in mid-epoch while the others
    go on; then mean pooling at variable lengths with members of two epoch limits (lr_race's cap
    inside a pack), two packs side by side (launcher.members=2)."""
    cases = [
        ("attention", [*ATTENTION, *QUICK], ["launcher.jobs=1", "launcher.threads=1"]),
        (
            "mean",
            [
                "task=multiplication",
                "pool=mean",
                "data=variable",
                "data.min_length=50",
                "data.max_length=120",
                "data.val_batches=8",
                "lr=1e-3,3e-3",
                "seed=1",
                *quick("trainer.max_epochs=1,2", drop=("data.val_size",)),
            ],
            ["launcher.members=2"],
        ),
    ]
    for name, args, how in cases:
        alone, packed = tmp_path / f"{name}-local", tmp_path / f"{name}-packed"
        out = train_py("-m", *args, f"hydra.sweep.dir={alone}")
        assert out.returncode == 0, out.stderr
        out = train_py("-m", "launcher=packed", *how, *args, f"hydra.sweep.dir={packed}")
        assert out.returncode == 0, out.stderr
        assert "Traceback" not in out.stderr
        assert_same_runs(alone, packed)
        assert "4 jobs: " in out.stdout and "4 jobs in " in out.stdout
    stacked = tmp_path / "attention-stacked"
    vectorised = ("launcher=packed", "launcher.jobs=1", "launcher.vectorise=true")
    out = train_py("-m", *vectorised, *cases[0][1], f"hydra.sweep.dir={stacked}")
    assert out.returncode == 0, out.stderr
    assert_close_runs(tmp_path / "attention-local", stacked)
    statuses = [
        read_json(p / "result.json")["status"] for p in job_dirs(tmp_path / "attention-packed")
    ]
    assert statuses.count("diverged") == 2
    epochs = [read_json(p / "result.json")["epochs"] for p in job_dirs(tmp_path / "mean-packed")]
    assert sorted(epochs) == [1, 1, 2, 2]


# A cell's two runs (lr 1e-3 and 3e-3, seed 1; about 0.3 s an epoch), as a multirun.
CELL = (
    "-m",
    "task=addition",
    "lr=1e-3,3e-3",
    "seed=1",
    *quick("data.batches_per_epoch=50", "trainer.max_epochs=4"),
)


@pytest.fixture(scope="module")
def cell_alone(tmp_path_factory):
    """CELL's runs alone under launcher=local: the sweep directory packed runs must equal."""
    alone = tmp_path_factory.mktemp("cell") / "local"
    out = train_py(*CELL, f"hydra.sweep.dir={alone}")
    assert out.returncode == 0, out.stderr
    return alone


def test_a_pack_killed_resumes_each_member_from_its_own_checkpoint(tmp_path, cell_alone):
    """A packed sweep (two packs in processes forked from the launcher) whose launcher is killed
    (SIGKILL) after its members' first checkpoints: the packs are sent SIGTERM and record their
    members as interrupted. One member resumed alone (launcher=local, lr=1e-3 only), then the
    packed command again, which leaves that finished run as it is and resumes the other from its
    own last.ckpt: both end as the runs alone do."""
    args, alone, packed = CELL, cell_alone, tmp_path / "packed"
    packs = ("launcher=packed", "launcher.jobs=2", "launcher.members=1")
    packed_args = (*args, *packs, f"hydra.sweep.dir={packed}")
    process = start(*packed_args)
    stopped: set[int] = set()  # the packs held after their member's first checkpoint

    def both_checkpointed() -> bool:
        """Each pack is stopped (SIGSTOP) once its member has a checkpoint, so that on a busy
        machine one cannot reach its limit before the other has one."""
        for ckpt in packed.glob("*/checkpoints/last.ckpt"):
            pid = int((ckpt.parent.parent / ".lock").read_text().split()[1])  # "pid N on host"
            if pid not in stopped:
                os.kill(pid, signal.SIGSTOP)
                stopped.add(pid)
        return len(stopped) == 2 or process.poll() is not None

    wait_for(both_checkpointed, "checkpoints")
    for pid in stopped:  # running again before the launcher dies: a stopped process in a group
        os.kill(pid, signal.SIGCONT)  # left without its leader would get SIGHUP (orphaned)
    process.send_signal(signal.SIGKILL)
    process.wait()
    wait_for(lambda: len(list(packed.glob("*/result.json"))) == 2, "the packs' records")
    results = [read_json(p) for p in packed.glob("*/result.json")]
    assert [r["status"] for r in results] == ["interrupted"] * 2, results
    one = [a if a != "lr=1e-3,3e-3" else "lr=1e-3" for a in args]
    out = train_py(*one, f"hydra.sweep.dir={packed}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("resuming from ") == 1
    out = train_py(*packed_args)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("resuming from ") == 1 and "already max_epochs" in out.stdout
    assert_same_runs(alone, packed, resumed=True)


def test_a_pack_in_a_submitit_job_is_requeued_and_resumes(tmp_path, cell_alone, monkeypatch):
    """launcher=submitit_local launcher.members=auto (as launcher=slurm on a cluster): the cell's
    two runs in one job. SIGUSR2 (what SLURM sends before a time limit or a preemption) after
    the members' first checkpoints, while the pack waits there until the signal has arrived
    (HOLD, the jobs named as without it): submitit requeues the job, each member resumes from its
    own last.ckpt and ends as the run alone does; submitit leaves no folder named after its
    pattern."""
    monkeypatch.setenv("PYTHONPATH", str(PLUGINS))  # tests/plugins/hold.py, for the job
    args, alone, packed = CELL, cell_alone, tmp_path / "packed"
    jobs = ("launcher=submitit_local", "launcher.members=auto", HOLD, unnamed())
    process = start(*args, *jobs, f"hydra.sweep.dir={packed}")
    try:
        wait_for(
            lambda: any(map(is_held, run_dirs(packed))) or process.poll() is not None,
            "the pack held after its first epoch",
        )
        assert process.poll() is None, process.stderr.read()
        assert len(list(packed.glob("*/checkpoints/last.ckpt"))) == 2
        locks = {p.read_text().split()[1] for p in packed.glob("*/.lock")}
        assert len(locks) == 1  # the members' one process
        os.kill(int(locks.pop()), signal.SIGUSR2)
        wait_for(
            lambda: all(map(has_received, run_dirs(packed))) or process.poll() is not None,
            "the pack's SIGUSR2",
        )
        for member in run_dirs(packed):
            release(member)
        assert process.wait(timeout=300) == 0, process.stderr.read()
    finally:
        for member in run_dirs(packed):  # none left waiting
            release(member)
        process.kill()
    (folder,) = (packed / ".submitit").iterdir()  # one job for the two runs
    log = next(folder.glob("*_log.out")).read_text()
    assert "Requeued job" in log and log.count("resuming from ") == 2
    results = [read_json(p) for p in packed.glob("*/result.json")]
    assert all(r["resumed_at_update"] for r in results)
    assert_same_runs(alone, packed, resumed=True, held=True)


def test_a_stacked_update_issues_the_same_ops_for_any_number_of_members():
    """On the meta device, as on an accelerator: the members one after another issue a run's ops
    per member; stacked (longterm.sweeps.stacked), one update of 1, 4 or 16 members issues the
    same."""
    cfg = composed("T0=100")
    batch = meta_batch(cfg.data.batch_size, default_width(100), cfg.task.n_features)
    alone = update_ops(build_model(cfg), batch)
    counts = {
        (m, v): pack_update_ops([build_model(cfg) for _ in range(m)], batch, v)
        for m in (1, 4, 16)
        for v in (False, True)
    }
    assert counts[1, False] == alone and counts[4, False] > 3 * alone
    assert counts[1, True] == counts[4, True] == counts[16, True]


def test_other_models_run_alone_beside_the_packs(tmp_path):
    """A sweep of the paper's network and a recurrent one: the first packs, the second runs job
    by job, and the sweep says so in one line."""
    out = train_py(
        "-m",
        "launcher=packed",
        "arch=attention,rnn",
        "lr=1e-3,3e-3",
        *quick("T0=20", "data.batches_per_epoch=3", "trainer.max_epochs=1"),
        f"hydra.sweep.dir={tmp_path}",
    )
    assert out.returncode == 0, out.stderr
    assert "2 jobs are not of the paper's network and run one by one" in out.stdout
    assert "4 jobs: 1 packs of at most 2 members and 2 single jobs" in out.stdout
    assert len(list(tmp_path.glob("*/result.json"))) == 4
