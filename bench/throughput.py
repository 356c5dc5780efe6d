"""Training throughput, peak memory and ops per update of the paper's model (reference, fused,
auto and `torch.compile` implementations), of recurrent baselines and of the convolutional
sequence mixers (S4D, Hyena) at T0 = 100, 1000, 10000, of the attention models (transformer,
all-attention, feedback) at T0 = 100 and 1000, and of GLA, DeltaNet and Mamba (their compiled
CPU kernels, model.impl=auto, at every T0; their reference forms, gla_reference,
deltanet_reference and mamba_reference, up to T0 = 1000); writes docs/performance.md
(`make gpu-check` writes docs/performance_gpu.md with --device cuda). A benchmark, not a test:
every ratio is taken between cases measured in the same run, because the machines these run on
are shared and their speed varies from run to run.

    python bench/throughput.py                       # the full table, docs/performance.md
    python bench/throughput.py --T0 100 --out /tmp/perf.md
    python bench/throughput.py --T0 100 --cases reference transformer feedback --out /tmp/perf.md
    python bench/throughput.py --T0 1000 10000 --cases mamba_reference mamba --out /tmp/m.md
    python bench/throughput.py --T0 100 1000 --cases gla_reference gla deltanet_reference deltanet \
        --out /tmp/g.md
    python bench/throughput.py --ops-only --T0 1000 10000     # ops per update only, no timing
    python bench/throughput.py --pack-members 1 4 16 --T0 100  # ops per update of a pack

One update is forward, backward and an Adam step on one batch of the addition task (B = 100, the
paper's data: each sequence T0 to 1.1 T0 steps, padded), for the model that `src/train.py` builds
from `conf/` with the case's overrides; the time is the median over at least three updates and
three seconds, after one update that compiles what is compiled. Peak memory is measured in another
fresh process: on the CPU, the peak resident memory during one update above the resident memory
before it (malloc is told to return blocks of 64 kB or more to the system at once, so freed
tensors do not hide in the baseline); on a GPU, torch.cuda.max_memory_allocated.

Ops per update are the aten operators that one update (forward, loss, backward, Adam step) issues
on PyTorch's `meta` device, which dispatches like CUDA and computes nothing (longterm.models.ops):
a count that does not depend on the machine, and on a GPU, at several microseconds per kernel
launch, the floor of an update's time. `model.impl=auto` plans there as it does on a GPU. Not
counted (—): torch.compile (its kernels are not aten ops), the recurrent baselines (on a GPU
cuDNN runs the whole sequence in a few kernels; without it PyTorch steps through time) and the
Feedback Transformer (a loop over steps whose count grows with T).

FLOPs are those of the model's matrix products (torch.utils.flop_counter on one reference update,
forward and backward), the same count for every implementation of one model; "of peak" divides
the achieved rate by the device's float32 matmul rate, measured at the start of the run.
"""

import argparse
import gc
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from report import Bench, document
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from longterm.config.builtins import generator_of
from longterm.models.ops import meta_batch, update_ops
from longterm.store.records import git_commit, machine
from longterm.sweeps.pack_ops import pack_update_ops
from longterm.tasks import default_width
from longterm.training.batches import TRAIN, FixedLengthBatches, batch_rng
from longterm.training.data import KeyedBatches
from longterm.training.parts import build_model

ROOT = Path(__file__).resolve().parent.parent
B = 100
# name: (config overrides, wrap the model in torch.compile)
CASES = {
    "reference": (["model.impl=reference"], False),
    "fused": (["model.impl=fused"], False),
    "auto": (["model.impl=auto"], False),
    "compile(reference)": (["model.impl=reference"], True),
    "rnn": (["model=rnn", "pool=last"], False),
    "lstm": (["model=lstm", "pool=last"], False),
    "transformer": (["arch=transformer"], False),
    "all_attention": (["arch=all_attention"], False),
    "feedback": (["arch=feedback"], False),
    "gla_reference": (["model=gla", "pool=last", "model.impl=reference"], False),
    "gla": (["model=gla", "pool=last"], False),
    "deltanet_reference": (["model=deltanet", "pool=last", "model.impl=reference"], False),
    "deltanet": (["model=deltanet", "pool=last"], False),
    "s4d": (["model=s4d", "pool=last"], False),
    "hyena": (["model=hyena", "pool=last"], False),
    "mamba_reference": (["model=mamba", "model.impl=reference"], False),
    "mamba": (["model=mamba", "model.impl=auto"], False),
}
# Cases measured only up to a T0: the attention models' per-step cost at T0 = 100 and 1000, the
# linear-attention models' chunked forms' tensors (gigabytes at T0 = 10000 on the CPU), and Mamba's
# readable form, which keeps its (B, E, N) states of every step for the backward pass (about
# 5 GB at T0 = 1000 and 50 GB at T0 = 10000).
MAX_T0 = {
    "transformer": 1000,
    "all_attention": 1000,
    "feedback": 1000,
    "gla_reference": 1000,
    "deltanet_reference": 1000,
    "mamba_reference": 1000,
}
# Cases whose aten ops per update are counted on the meta device (see "How it is measured").
META_OPS = ("reference", "fused", "auto", "transformer", "all_attention")
META_OPS += ("gla_reference", "gla", "deltanet_reference", "deltanet", "s4d", "hyena", "mamba")
METHOD = "\n\n".join(__doc__.strip().split("\n\n")[2:])  # "How it is measured"


def config(overrides: list[str], T0: int):
    """The composed config `src/train.py` would run with these overrides at T0."""
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=[f"T0={T0}", *overrides])


def build(overrides: list[str], T0: int, device: str) -> tuple[torch.nn.Module, tuple]:
    """The network `src/train.py` would train, and one training batch on `device`."""
    cfg = config(overrides, T0)
    net = build_model(cfg).net.to(device)
    batch = FixedLengthBatches(cfg.task.generator, T0, B)(batch_rng(0, 0, 0, 0))
    return net, tuple(t.to(device) for t in batch)


def model_flops(case: str, T0: int) -> int:
    """Matrix-product FLOPs of one update of the reference implementation (forward + backward);
    Mamba's with its compiled kernel (model.impl=auto) whatever the case's, the same count for
    both forms: its readable form is too large at T0 = 10000, and the count is that of the
    projections, since the kernel's scan is no matrix product. GLA's are counted on the meta
    device (shapes only, no memory): its chunked form takes over 20 GB at T0 = 10000 on the CPU,
    and its chunks are the same on every device (models/kernels/chunks.py), so the count is the
    CPU's. The others are counted on the CPU (DeltaNet's chunks differ off the CPU)."""
    overrides = CASES[case][0]
    impl = "model.impl=auto" if "model=mamba" in overrides else "model.impl=reference"
    reference = [o for o in overrides if not o.startswith("model.impl=")] + [impl]
    net, (x, y, mask) = build(reference, T0, "meta" if "model=gla" in overrides else "cpu")
    # With oneDNN, nn.LSTM runs as one opaque kernel that the counter cannot see into.
    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        F.mse_loss(net(x, mask).squeeze(-1), y).backward()
    return counter.get_total_flops()


def ops_per_update(case: str, T0: int) -> int | None:
    """aten ops of one update of the case on the meta device (longterm.models.ops); None for a
    case not in META_OPS."""
    if case not in META_OPS:
        return None
    cfg = config(CASES[case][0], T0)
    batch = meta_batch(B, default_width(T0), cfg.task.n_features)
    return update_ops(build_model(cfg), batch)


def pack_ops(case: str, T0: int, members: int, vectorise: bool) -> int:
    """aten ops of one update of a pack of `members` members of the case (launcher=packed,
    longterm.sweeps.pack), one after another or stacked (`vectorise`), on the meta device."""
    cfg = config(CASES[case][0], T0)
    batch = meta_batch(B, default_width(T0), cfg.task.n_features)
    return pack_update_ops([build_model(cfg) for _ in range(members)], batch, vectorise)


def print_pack_ops(args: argparse.Namespace) -> None:
    """A table of the aten ops per packed update for each number of members, the members one
    after another (the CPU's exact path) and stacked (an accelerator's), no timing."""
    sizes = " | ".join(f"{m} members" for m in args.pack_members)
    print(f"| case | T0 | members | {sizes} |")
    print("|---|---|---|" + "---|" * len(args.pack_members))
    for case in [c for c in args.cases if c in META_OPS]:
        for T0 in args.T0:
            for vectorise, how in ((False, "one after another"), (True, "stacked")):
                counts = [pack_ops(case, T0, m, vectorise) for m in args.pack_members]
                cells = " | ".join(f"{n:,}" for n in counts)
                print(f"| {case} | {T0} | {how} | {cells} |", flush=True)


def memory_kb(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM) in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def peak_mb(update: Callable[[], None], device: str) -> float:
    """The peak memory of one more update above the memory before it, in MB."""
    gc.collect()
    if device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    else:
        Path("/proc/self/clear_refs").write_text("5")  # resets the peak (VmHWM) to VmRSS
        base = memory_kb("VmRSS") * 1024
    update()
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else memory_kb("VmHWM") * 1024
    return (peak - base) / 2**20


def measure(case: str, T0: int, device: str, min_time: float, min_updates: int) -> dict:
    """Time updates of one case in this process (min_updates = 0: measure the peak memory of one
    update instead); return its record."""
    overrides, compiled = CASES[case]
    torch.manual_seed(0)
    net, (x, y, mask) = build(overrides, T0, device)
    model = torch.compile(net) if compiled else net
    optimizer = torch.optim.Adam(net.parameters(), lr=1e-3)
    sync = torch.cuda.synchronize if device == "cuda" else lambda: None

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        F.mse_loss(model(x, mask).squeeze(-1), y).backward()
        optimizer.step()
        sync()

    update()  # compiles where there is something to compile
    if min_updates == 0:
        return {"peak_mb": peak_mb(update, device)}
    times: list[float] = []
    while len(times) < min_updates or sum(times) < min_time:
        start = time.perf_counter()
        update()
        times.append(time.perf_counter() - start)
    return {
        "case": case,
        "T0": T0,
        "T": x.shape[1],
        "s_per_update": statistics.median(times),
        "updates_timed": len(times),
        "flops": model_flops(case, T0),
        "ops": ops_per_update(case, T0),
    }


def child(case: str, T0: int, args: argparse.Namespace, min_updates: int, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--case", case, "--T0", str(T0), "--device", args.device]
    cmd += ["--min-time", str(args.min_time), "--min-updates", str(min_updates)]
    cmd += [] if args.threads is None else ["--threads", str(args.threads)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"case {case} at T0={T0} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_case(case: str, T0: int, args: argparse.Namespace) -> dict:
    """`measure` in fresh processes: one times the updates; one measures the peak memory with
    malloc returning every block of 64 kB or more to the system at once (which slows it down)."""
    record = child(case, T0, args, args.min_updates, dict(os.environ))
    env = dict(os.environ, MALLOC_MMAP_THRESHOLD_="65536", MALLOC_TRIM_THRESHOLD_="0")
    return record | child(case, T0, args, 0, env)


def matmul_peak(device: str, n: int = 2048, repeats: int = 10) -> float:
    """The device's float32 matmul rate in GFLOP/s: the best of five timings."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    sync = torch.cuda.synchronize if device == "cuda" else lambda: None
    a @ b
    best = float("inf")
    for _ in range(5):
        sync()
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        sync()
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 * repeats / best / 1e9


def data_ms(T0: int) -> float:
    """Median time to generate one training batch (addition, B = 100), in ms."""
    stream = KeyedBatches(FixedLengthBatches(generator_of("addition"), T0, B), 0, TRAIN)
    times = []
    for index in range(5):
        start = time.perf_counter()
        stream[(0, index)]
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def parse() -> argparse.Namespace:
    """The command line (sys.argv)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--min-time", type=float, default=3.0, help="seconds timed per case")
    parser.add_argument("--min-updates", type=int, default=3, help="0: measure memory instead")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument(
        "--threads",
        type=int,
        help="torch's threads in every process (default torch's own, one per core; 1 as a"
        " sweep's runs have, and on a machine where other work runs)",
    )
    parser.add_argument(
        "--runs", type=Path, nargs="*", default=[], help="run directories to report as well"
    )
    parser.add_argument("--runs-note", default="", help="a sentence on how the runs were made")
    parser.add_argument("--note", default="", help="a line on the machine, e.g. what else ran")
    parser.add_argument(
        "--ops-only", action="store_true", help="print the ops per update of each case, no timing"
    )
    parser.add_argument(
        "--pack-members",
        type=int,
        nargs="+",
        help="print the ops per update of a pack (launcher=packed) of each of these sizes",
    )
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a child process
    return parser.parse_args()


def run_cases(args: argparse.Namespace) -> list[dict]:
    """Every case at every T0 it is measured at, each in fresh processes, printed as it ends."""
    records = []
    for T0 in args.T0:
        for case in [c for c in args.cases if MAX_T0.get(c, T0) >= T0]:
            r = run_case(case, T0, args)
            ops = "—" if r["ops"] is None else f"{r['ops']:,}"
            print(
                f"T0={T0} {case}: {r['s_per_update'] * 1e3:.1f} ms/update, "
                f"peak {r['peak_mb']:.1f} MB, {ops} ops/update",
                flush=True,
            )
            records.append(r)
    return records


def benchmark(args: argparse.Namespace) -> Bench:
    """The matmul peak, the data generator and every case, with where and when they ran."""
    started = time.perf_counter()
    peak = matmul_peak(args.device)
    print(f"float32 matmul peak: {peak:.1f} GFLOP/s", flush=True)
    data = {T0: data_ms(T0) for T0 in args.T0}
    records = run_cases(args)
    return Bench(
        command=shlex.join(["python", "bench/throughput.py", *sys.argv[1:]]).strip(),
        date=datetime.now(UTC),
        commit=git_commit(),
        machine=machine(),
        platform=platform.platform(),
        threads=torch.get_num_threads(),
        device=args.device,
        batch=B,
        peak=peak,
        seconds=time.perf_counter() - started,
        records=records,
        data=data,
        runs=args.runs,
        runs_note=args.runs_note,
        note=args.note,
    )


def print_ops(args: argparse.Namespace) -> None:
    """A table of the aten ops per update of each counted case at each T0 (no timing)."""
    cases = [c for c in args.cases if c in META_OPS]
    print("| case | " + " | ".join(f"T0 = {T0}" for T0 in args.T0) + " |")
    print("|---|" + "---|" * len(args.T0))
    for case in cases:
        counts = [ops_per_update(case, T0) for T0 in args.T0 if MAX_T0.get(case, T0) >= T0]
        cells = [f"{n:,}" for n in counts] + ["—"] * (len(args.T0) - len(counts))
        print(f"| {case} | " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    """Measure every case at every T0 and write the page; with --case, measure one case only."""
    args = parse()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.ops_only:
        print_ops(args)
        return
    if args.pack_members:
        print_pack_ops(args)
        return
    if args.case:
        record = measure(args.case, args.T0[0], args.device, args.min_time, args.min_updates)
        print(json.dumps(record))
        return
    bench = benchmark(args)
    text = document(bench, METHOD)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    if args.json:
        measured = {"records": bench.records, "data_ms": bench.data, "device": bench.device}
        args.json.write_text(json.dumps(measured, indent=1))
    print(text)


if __name__ == "__main__":
    main()
