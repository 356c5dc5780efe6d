"""`make gpu-check`: what only a CUDA machine can show, in one command of a few minutes.

    python bench/gpu_check.py [--out docs/performance_gpu.md] [--work outputs/gpu_check]

(a) the tests that need CUDA (`pytest -m gpu`: every implementation of the paper's model against
    the reference on CUDA at T0 = 1000, and every model of the framework on CUDA against itself on
    the CPU, outputs and gradients within float32 rounding; a packed sweep; a token run scored at
    eval.lengths);
(b) the default run (addition, attention, T0 = 50) trained to 100% on the GPU;
(c) bench/throughput.py --device cuda at T0 = 1000 and 10000, writing docs/performance_gpu.md
    (the same generated page as docs/performance.md, with the GPU named);
(d) an estimate of the whole Table 1 grid's time on this GPU (conf/experiment/table1.yaml, 96
    runs), from the epoch times measured in (b) and (c), appended to that page;
(e) with mamba-ssm installed (`pip install .[mamba]`), its selective_scan_fn against this
    project's parallel scan (models/kernels/selective_scan.py) on CUDA: outputs, gradients and time.

Exit status: 0 when every step passed, 1 when one failed (the rest still run), 2 at once on a
machine without CUDA, where nothing is checked.
"""

import argparse
import csv
import importlib.util
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
NO_CUDA = 2
# Table 1 (conf/experiment/table1.yaml): at each T0, 2 tasks x 2 poolings x 4 learning rates.
TABLE1_T0 = (50, 100, 500, 1000, 5000, 10000)
TABLE1_RUNS = [
    (task, pool, lr)
    for task in ("addition", "multiplication")
    for pool in ("attention", "mean")
    for lr in (3e-4, 1e-3, 3e-3, 1e-2)
]
MAX_EPOCHS = 100  # conf/trainer/default.yaml, the paper's limit
RUNS_CSV = ROOT / "docs" / "results" / "runs.csv"  # the CPU sweeps behind docs/results


def step(name: str, command: list[str], failures: list[str]) -> float:
    """Run one step's command from the repository root, its output shown as it comes; note a
    failure; return its wall time in seconds."""
    print(f"\n== {name}: {' '.join(command)}", flush=True)
    start = time.perf_counter()
    if subprocess.run(command, cwd=ROOT).returncode != 0:
        failures.append(name)
    seconds = time.perf_counter() - start
    print(f"== {name}: {'FAILED' if name in failures else 'ok'} in {seconds:.0f} s", flush=True)
    return seconds


def update_seconds(records: list[dict], T0: int) -> float:
    """Seconds per update of the default implementation (auto) at any T0: a + b T, the line
    through the two measured lengths."""
    at = {r["T0"]: r["s_per_update"] for r in records if r["case"] == "auto"}
    (t1, s1), (t2, s2) = sorted(at.items())[:2]
    slope = (s2 - s1) / (t2 - t1)
    return max(s1 + slope * (T0 - t1), 0.0)


def known_epochs() -> dict[tuple, list[int]]:
    """Epochs to 100% of every solved fixed-length run of docs/results (the CPU sweeps), by
    (T0, task, pool, lr): the same seeds and data give the same epochs on any device, up to
    float32 rounding."""
    epochs: dict[tuple, list[int]] = {}
    if not RUNS_CSV.exists():
        return epochs
    with RUNS_CSV.open() as f:
        for row in csv.DictReader(f):
            if row["status"] == "solved" and row["data"] == "fixed":
                key = (int(row["T0"]), row["task"], row["pool"], float(row["lr"]))
                epochs.setdefault(key, []).append(int(float(row["epoch_solved"])))
    return epochs


def table1_estimate(run: dict, measured: dict) -> list[str]:
    """The Table 1 grid's time on this GPU, as markdown: per T0, an epoch's time (the default
    run's measured overhead per epoch plus 1000 updates at the measured rate, or the data feed's
    rate where that is slower) times the epochs of its 16 runs, at the epoch limit (the bound)
    and with the epochs the CPU sweeps needed where a run solved (the limit elsewhere)."""
    from longterm.training.data import feed_workers

    records, data_ms = measured["records"], {int(k): v for k, v in measured["data_ms"].items()}
    workers = max(feed_workers("auto", "cuda"), 1)
    run_epoch = run["wall_time_s"] / max(run["epochs"], 1)
    overhead = max(run_epoch - 1000 * update_seconds(records, 50), 0.0)
    per_batch = sorted(data_ms.items())
    epochs = known_epochs()
    lines = [
        "## The whole Table 1 grid on this GPU (estimate)",
        "",
        f"96 runs (conf/experiment/table1.yaml). An epoch at T0 is the default run's measured "
        f"overhead per epoch ({overhead:.1f} s: Lightning, validation, logging; its epoch took "
        f"{run_epoch:.1f} s) plus 1000 updates of `model.impl=auto` at the rate measured above "
        f"(a line through T0 = {per_batch[0][0]} and {per_batch[-1][0]}), or the data feed's "
        f"time where it is slower ({workers} workers, each a batch per the generator time above). "
        "Bound: every run to the epoch limit (100). Expected: each run's epochs to 100% where "
        "the CPU sweeps of docs/results solved it (median over seeds), the limit elsewhere.",
        "",
        "| T0 | epoch, s | runs | epochs: bound | epochs: expected | hours: bound "
        "| hours: expected |",
        "|---|---|---|---|---|---|---|",
    ]
    total_bound = total_expected = 0.0
    (t1, ms1), (t2, ms2) = per_batch[0], per_batch[-1]
    for T0 in TABLE1_T0:
        batch_ms = max(ms1 + (ms2 - ms1) * (T0 - t1) / (t2 - t1), 0.0)
        feed = batch_ms * 1000 / 1e3 / workers  # seconds for 1000 batches
        epoch = overhead + max(1000 * update_seconds(records, T0), feed)
        expected = sum(
            statistics.median(epochs.get((T0, *run), [MAX_EPOCHS])) for run in TABLE1_RUNS
        )
        bound = len(TABLE1_RUNS) * MAX_EPOCHS
        total_bound += bound * epoch / 3600
        total_expected += expected * epoch / 3600
        lines.append(
            f"| {T0} | {epoch:.1f} | {len(TABLE1_RUNS)} | {bound} | {expected:.0f} | "
            f"{bound * epoch / 3600:.2f} | {expected * epoch / 3600:.2f} |"
        )
    lines += [
        f"| all | | 96 | | | {total_bound:.1f} | {total_expected:.1f} |",
        "",
        f"Made by `make gpu-check` (bench/gpu_check.py), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC.",
        "",
    ]
    return lines


def mamba_ssm_check(b: int = 8, T: int = 4096, E: int = 128, N: int = 16) -> bool:
    """(e) mamba-ssm's selective_scan_fn against scan_parallel on CUDA, float32: the largest
    difference of y and of the gradients relative to the largest value (passes within 1e-3), and
    the median time of a forward and backward pass of each; False if they differ."""
    from torch.utils.benchmark import Timer

    from longterm.models.kernels.selective_scan import scan_mamba_ssm, scan_parallel

    g = torch.Generator(device="cuda").manual_seed(0)
    u, B, C = (torch.randn(b, T, n, device="cuda", generator=g) for n in (E, N, N))
    delta = torch.nn.functional.softplus(torch.randn(b, T, E, device="cuda", generator=g) - 2)
    A = -torch.exp(torch.randn(E, N, device="cuda", generator=g))
    inputs = [t.requires_grad_() for t in (u, delta, A, B, C, torch.randn(E, device="cuda"))]
    dy = torch.randn(b, T, E, device="cuda", generator=g)
    results = {}
    for name, scan in (("mamba_ssm", scan_mamba_ssm), ("parallel", scan_parallel)):
        y = scan(*inputs)[0]
        results[name] = [y, *torch.autograd.grad(y, inputs, dy)]
        timer = Timer(
            "torch.autograd.grad(scan(*x)[0], x, dy)",
            globals=dict(scan=scan, x=inputs, dy=dy, torch=torch),
        )
        seconds = timer.blocked_autorange(min_run_time=1).median
        print(f"{name}: {seconds * 1e3:.2f} ms forward + backward (B={b}, T={T}, E={E}, N={N})")
    worst = max(
        ((a - p).abs().max() / a.abs().max()).item()
        for a, p in zip(results["mamba_ssm"], results["parallel"], strict=True)
    )
    print(f"largest difference, relative to the largest value: {worst:.2e} (y and gradients)")
    return worst < 1e-3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_gpu.md")
    parser.add_argument("--work", type=Path, default=ROOT / "outputs" / "gpu_check")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(
            f"gpu-check: no CUDA device on this machine (torch {torch.__version__}); nothing "
            f"was checked (exit status {NO_CUDA}): run `make gpu-check` on a machine with an "
            "NVIDIA GPU",
            file=sys.stderr,
        )
        return NO_CUDA
    print(f"gpu-check on {torch.cuda.get_device_name(0)}", flush=True)
    work = args.work / datetime.now(UTC).strftime("%Y-%m-%d_%H-%M-%S")
    python, failures = sys.executable, []
    started = time.perf_counter()

    step("(a) tests on CUDA", [python, "-m", "pytest", "-q", "-m", "gpu"], failures)

    run_dir = work / "default"
    train = [python, "src/train.py", "trainer.accelerator=gpu", "trainer.enable_progress_bar=false"]
    step("(b) the default run on the GPU", [*train, f"hydra.run.dir={run_dir}"], failures)
    result_file = run_dir / "result.json"
    run = json.loads(result_file.read_text()) if result_file.exists() else None
    if run is None or run["status"] != "solved" or not run["machine"]["cuda"]:
        failures.append("(b) solved on the GPU")
    else:
        print(f"solved in {run['epochs']} epochs, {run['wall_time_s']:.1f} s on the GPU")

    measured_file = work / "bench.json"
    bench = [python, "bench/throughput.py", "--device", "cuda", "--T0", "1000", "10000"]
    bench += ["--cases", "reference", "fused", "auto", "rnn", "lstm", "--min-time", "1"]
    bench += ["--out", str(args.out), "--json", str(measured_file)]
    if run is not None:
        bench += ["--runs", str(run_dir), "--runs-note", "The default run, trained by gpu-check."]
    step("(c) benchmark on the GPU", bench, failures)

    if run is not None and measured_file.exists():
        estimate = table1_estimate(run, json.loads(measured_file.read_text()))
        print("\n" + "\n".join(estimate))
        with args.out.open("a") as f:
            f.write("\n" + "\n".join(estimate))
    else:
        failures.append("(d) Table 1 estimate")

    if importlib.util.find_spec("mamba_ssm") is None:
        print("\n== (e) skipped: mamba-ssm is not installed (pip install .[mamba])")
    else:
        print("\n== (e) mamba-ssm's selective scan against the parallel scan", flush=True)
        if not mamba_ssm_check():
            failures.append("(e) mamba-ssm against the parallel scan")

    seconds = time.perf_counter() - started
    print(f"\ngpu-check: {len(failures)} failed {failures} in {seconds:.0f} s; page: {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
