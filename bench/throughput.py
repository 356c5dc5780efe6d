"""Training throughput and peak memory per update of the paper's model (reference, fused and
`torch.compile` implementations), of recurrent baselines, at T0 = 100, 1000, 10000, and of the
attention models (transformer, all-attention, feedback) at T0 = 100 and 1000; writes
docs/performance.md. A benchmark, not a test: every ratio is taken between cases measured in the
same run, because the machines these run on are shared and their speed varies from run to run.

    python bench/throughput.py                       # the full table, docs/performance.md
    python bench/throughput.py --T0 100 --out /tmp/perf.md
    python bench/throughput.py --T0 100 --cases reference transformer feedback --out /tmp/perf.md

One update is forward, backward and an Adam step on one batch of the addition task (B = 100, the
paper's data: each sequence T0 to 1.1 T0 steps, padded), for the model that `src/train.py` builds
from `conf/` with the case's overrides; the time is the median over at least three updates and
three seconds, after one update that compiles what is compiled. Peak memory is measured in another
fresh process: on the CPU, the peak resident memory during one update above the resident memory
before it (malloc is told to return blocks of 64 kB or more to the system at once, so freed
tensors do not hide in the baseline); on a GPU, torch.cuda.max_memory_allocated.

FLOPs are those of the model's matrix products (torch.utils.flop_counter on one reference update,
forward and backward), the same count for every implementation of one model; "of peak" divides
the achieved rate by this machine's float32 matmul rate, measured at the start of the run.
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
from datetime import UTC, datetime
from pathlib import Path

import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from longterm.batches import FixedLengthBatches, batch_rng
from longterm.records import git_commit, machine
from longterm.run import build_model

ROOT = Path(__file__).resolve().parent.parent
B = 100
EPOCH = 1000  # updates per epoch (§2.2)
# name: (config overrides, wrap the model in torch.compile)
CASES = {
    "reference": (["model.impl=reference"], False),
    "fused": (["model.impl=fused"], False),
    "compile(reference)": (["model.impl=reference"], True),
    "rnn": (["model=rnn", "pool=last"], False),
    "lstm": (["model=lstm", "pool=last"], False),
    "transformer": (["arch=transformer"], False),
    "all_attention": (["arch=all_attention"], False),
    "feedback": (["arch=feedback"], False),
}
# Cases measured only up to a T0: the attention models' per-step cost at T0 = 100 and 1000.
MAX_T0 = {"transformer": 1000, "all_attention": 1000, "feedback": 1000}
PAPER_RNN_OVER_ATTENTION = 917 / 254  # epoch times at T0 = 10000 on a GTX 980 Ti (§2.2)


def build(overrides: list[str], T0: int, device: str) -> tuple[torch.nn.Module, tuple]:
    """The network `src/train.py` would train, and one training batch on `device`."""
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=[f"T0={T0}", *overrides])
    net = build_model(cfg).net.to(device)
    batch = FixedLengthBatches(cfg.task.name, T0, B)(batch_rng(0, 0, 0, 0))
    return net, tuple(t.to(device) for t in batch)


def model_flops(overrides: list[str], T0: int) -> int:
    """Matrix-product FLOPs of one update of the reference implementation (forward + backward)."""
    reference = [
        o if not o.startswith("model.impl=") else "model.impl=reference" for o in overrides
    ]
    net, (x, y, mask) = build(reference, T0, "cpu")
    # With oneDNN, nn.LSTM runs as one opaque kernel that the counter cannot see into.
    with torch.backends.mkldnn.flags(enabled=False), FlopCounterMode(display=False) as counter:
        F.mse_loss(net(x, mask).squeeze(-1), y).backward()
    return counter.get_total_flops()


def memory_kb(field: str) -> int:
    """A field of /proc/self/status (VmRSS, VmHWM) in kB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


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
        gc.collect()
        if device == "cuda":
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
        else:
            Path("/proc/self/clear_refs").write_text("5")  # resets the peak (VmHWM) to VmRSS
            base = memory_kb("VmRSS") * 1024
        update()
        peak = torch.cuda.max_memory_allocated() if device == "cuda" else memory_kb("VmHWM") * 1024
        return {"peak_mb": (peak - base) / 2**20}
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
        "flops": model_flops(overrides, T0),
    }


def child(case: str, T0: int, args: argparse.Namespace, min_updates: int, env: dict) -> dict:
    cmd = [sys.executable, __file__, "--case", case, "--T0", str(T0), "--device", args.device]
    cmd += ["--min-time", str(args.min_time), "--min-updates", str(min_updates)]
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


def matmul_peak(n: int = 2048, repeats: int = 10) -> float:
    """This machine's float32 matmul rate in GFLOP/s: the best of five timings."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(repeats):
            a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * n**3 * repeats / best / 1e9


def data_ms(T0: int) -> float:
    """Median time to generate one training batch (addition, B = 100), in ms."""
    recipe = FixedLengthBatches("addition", T0, B)
    times = []
    for index in range(5):
        start = time.perf_counter()
        recipe(batch_rng(0, 0, 0, index))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def times(x: float) -> str:
    """A ratio with one decimal, or two significant digits below 1 (0.032×, not 0.0×)."""
    return f"{x:.1f}×" if x >= 1 else f"{x:.2g}×"


def table(records: list[dict], peak: float, data: dict[int, float]) -> list[str]:
    """Markdown rows: each case against the reference of the same T0."""
    lines = [
        "| T0 | model | ms / update | updates / s | × reference | M steps / s | GFLOP/s "
        "| of matmul peak | peak MB / update | reference memory ÷ this | epoch (1000 updates) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ref = next(q for q in records if q["T0"] == r["T0"] and q["case"] == "reference")
        gflops = r["flops"] / r["s_per_update"] / 1e9
        lines.append(
            f"| {r['T0']} | {r['case']} | {r['s_per_update'] * 1e3:.1f} | "
            f"{1 / r['s_per_update']:.2f} | {times(ref['s_per_update'] / r['s_per_update'])} | "
            f"{B * r['T'] / r['s_per_update'] / 1e6:.2f} | {gflops:.1f} | {gflops / peak:.1%} | "
            f"{r['peak_mb']:.1f} | {ref['peak_mb'] / max(r['peak_mb'], 0.1):.2g}× | "
            f"{EPOCH * r['s_per_update']:.0f} s |"
        )
    lines += ["", "| T0 | data generator, ms / batch | share of a fused update |", "|---|---|---|"]
    for T0, ms in data.items():
        fused = next(r for r in records if r["T0"] == T0 and r["case"] == "fused")
        lines.append(f"| {T0} | {ms:.1f} | {ms / 1e3 / fused['s_per_update']:.0%} |")
    return lines


def rnn_ratio(records: list[dict], T0: int) -> list[str]:
    """Epoch-time ratio of the vanilla RNN to feed-forward attention, against the paper's."""
    at = {r["case"]: r["s_per_update"] for r in records if r["T0"] == T0}
    if "rnn" not in at:
        return []
    return [
        f"At T0 = {T0}, an epoch of the vanilla RNN takes {at['rnn'] / at['fused']:.1f}× as long "
        f"as feed-forward attention with the fused encoder, and "
        f"{at['rnn'] / at['reference']:.1f}× as long as the reference implementation; the paper "
        f"reports 917 s / 254 s = {PAPER_RNN_OVER_ATTENTION:.1f}× on a GTX 980 Ti.",
    ]


def feedback_ratio(records: list[dict]) -> list[str]:
    """Per T0, one feedback update against the parallel attention models' (docs/models.md)."""
    lines = []
    for T0 in sorted({r["T0"] for r in records}):
        at = {r["case"]: r["s_per_update"] for r in records if r["T0"] == T0}
        if "feedback" in at and {"transformer", "all_attention"} <= set(at):
            lines.append(
                f"At T0 = {T0}, one update of the Feedback Transformer (steps in sequence) takes "
                f"{times(at['feedback'] / at['transformer'])} as long as the transformer's and "
                f"{times(at['feedback'] / at['all_attention'])} as long as all-attention's "
                "(all steps at once)."
            )
    return lines


def runs_section(run_dirs: list[Path]) -> list[str]:
    """End-to-end training runs, read from their result.json, with the command of each."""
    lines = [
        "## End-to-end runs",
        "",
        "| command | status | epochs | val/acc after each epoch | wall time | commit | machine |",
        "|---|---|---|---|---|---|---|",
    ]
    for run_dir in run_dirs:
        r = json.loads((run_dir / "result.json").read_text())
        overrides = OmegaConf.load(run_dir / ".hydra" / "overrides.yaml")
        command = " ".join(["python src/train.py", *overrides, f"hydra.run.dir={run_dir}"])
        history = ", ".join(f"{a:.3f}" for a in r["val_acc_history"])
        m = r["machine"]
        lines.append(
            f"| `{command}` | {r['status']} | {r['epochs']} | {history} | "
            f"{r['wall_time_s'] / 60:.1f} min | {r['git_commit'][:12]} | "
            f"{m['processor']}, {m['cpus']} cores, torch {m['torch']} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--T0", type=int, nargs="+", default=[100, 1000, 10000])
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--min-time", type=float, default=3.0, help="seconds timed per case")
    parser.add_argument("--min-updates", type=int, default=3, help="0: measure memory instead")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "performance.md")
    parser.add_argument(
        "--runs", type=Path, nargs="*", default=[], help="run directories to report as well"
    )
    parser.add_argument("--runs-note", default="", help="a sentence on how the runs were made")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # one case, in a child process
    args = parser.parse_args()
    if args.case:
        record = measure(args.case, args.T0[0], args.device, args.min_time, args.min_updates)
        print(json.dumps(record))
        return

    started = time.perf_counter()
    peak = matmul_peak()
    print(f"float32 matmul peak: {peak:.1f} GFLOP/s", flush=True)
    data = {T0: data_ms(T0) for T0 in args.T0}
    records = []
    for T0 in args.T0:
        for case in [c for c in args.cases if MAX_T0.get(c, T0) >= T0]:
            records.append(run_case(case, T0, args))
            r = records[-1]
            print(
                f"T0={T0} {case}: {r['s_per_update'] * 1e3:.1f} ms/update, "
                f"peak {r['peak_mb']:.1f} MB",
                flush=True,
            )
    command = shlex.join(["python", "bench/throughput.py", *sys.argv[1:]])
    lines = [
        "# Performance",
        "",
        "Generated by `bench/throughput.py`; do not edit by hand. Regenerate with",
        "",
        f"    {command.strip()}",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit: {git_commit()}",
        f"- machine: {json.dumps(machine())}; {platform.platform()}",
        f"- threads: {torch.get_num_threads()}; device: {args.device}",
        f"- float32 matmul peak measured in this run: {peak:.1f} GFLOP/s",
        f"- whole benchmark: {time.perf_counter() - started:.0f} s",
        "",
        f"B = {B}, D = 100 (the attention models: D = 64, two layers, span 64, conf/model/), "
        "addition task, float32. Ratios are against the reference implementation at the same "
        "T0, measured in this run.",
        "",
        *table(records, peak, data),
        "",
        *rnn_ratio(records, max(args.T0)),
        "",
        *feedback_ratio(records),
        "",
        *(runs_section(args.runs) if args.runs else []),
        "",
        *([args.runs_note, ""] if args.runs_note else []),
        "## How it is measured",
        "",
        "\n\n".join(__doc__.strip().split("\n\n")[2:]),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
