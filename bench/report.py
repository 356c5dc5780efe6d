"""docs/performance.md from the measurements of bench/throughput.py: the table of every case
against the reference of its T0, the data generator's share, the ratios the paper and
docs/models.md quote, and the end-to-end runs named on the command line."""

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from omegaconf import OmegaConf

EPOCH = 1000  # updates per epoch (§2.2)
PAPER_RNN_OVER_ATTENTION = 917 / 254  # epoch times at T0 = 10000 on a GTX 980 Ti (§2.2)


@dataclass
class Bench:
    """One benchmark run: what was measured, and where and how."""

    command: str  # the command line that regenerates the page
    date: datetime
    commit: str
    machine: dict
    platform: str
    threads: int
    device: str
    batch: int  # sequences per update
    peak: float  # this machine's float32 matmul rate, GFLOP/s
    seconds: float  # the whole benchmark
    records: list[dict]  # one per case and T0 (throughput.measure)
    data: dict[int, float]  # T0 -> ms to generate one batch
    runs: list[Path]  # end-to-end run directories to report
    runs_note: str  # a sentence on how the runs were made
    note: str = ""  # a line on the machine while it ran (e.g. what else ran)


# A case measured against its own readable form rather than the paper's model's reference.
REFERENCE_OF = {m: f"{m}_reference" for m in ("mamba", "gla", "deltanet")}


def reference_of(records: list[dict], r: dict) -> dict | None:
    """The record of r's reference at r's T0 (REFERENCE_OF, else `reference`), if measured."""
    case = REFERENCE_OF.get(r["case"], "reference")
    return next((q for q in records if q["T0"] == r["T0"] and q["case"] == case), None)


def times(x: float) -> str:
    """A ratio with one decimal, or two significant digits below 1 (0.032×, not 0.0×)."""
    return f"{x:.1f}×" if x >= 1 else f"{x:.2g}×"


def table(bench: Bench) -> list[str]:
    """Markdown rows: each case against the reference of the same T0."""
    records, peak = bench.records, bench.peak
    lines = [
        "| T0 | model | ms / update | updates / s | × reference | M steps / s | GFLOP/s "
        "| of matmul peak | peak MB / update | reference memory ÷ this | aten ops / update "
        "| epoch (1000 updates) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ref = reference_of(records, r)
        speed = "—" if ref is None else times(ref["s_per_update"] / r["s_per_update"])
        memory = "—" if ref is None else f"{ref['peak_mb'] / max(r['peak_mb'], 0.1):.2g}×"
        gflops = r["flops"] / r["s_per_update"] / 1e9
        lines.append(
            f"| {r['T0']} | {r['case']} | {r['s_per_update'] * 1e3:.1f} | "
            f"{1 / r['s_per_update']:.2f} | {speed} | "
            f"{bench.batch * r['T'] / r['s_per_update'] / 1e6:.2f} | {gflops:.1f} | "
            f"{gflops / peak:.1%} | {r['peak_mb']:.1f} | {memory} | {ops(r)} | "
            f"{EPOCH * r['s_per_update']:.0f} s |"
        )
    default = "auto" if any(r["case"] == "auto" for r in records) else "fused"
    if not any(r["case"] == default for r in records):
        return lines
    lines += [
        "",
        f"| T0 | data generator, ms / batch | share of one {default} update |",
        "|---|---|---|",
    ]
    for T0, ms in bench.data.items():
        update = next(r for r in records if r["T0"] == T0 and r["case"] == default)
        lines.append(f"| {T0} | {ms:.1f} | {ms / 1e3 / update['s_per_update']:.0%} |")
    return lines


def ops(record: dict) -> str:
    """The aten ops per update counted on the meta device, or — where not counted."""
    return "—" if record.get("ops") is None else f"{record['ops']:,}"


def rnn_ratio(records: list[dict], T0: int) -> list[str]:
    """Epoch-time ratio of the vanilla RNN to feed-forward attention, against the paper's."""
    at = {r["case"]: r["s_per_update"] for r in records if r["T0"] == T0}
    if "rnn" not in at:
        return []
    impl = "auto" if "auto" in at else "fused"
    return [
        f"At T0 = {T0}, an epoch of the vanilla RNN takes {at['rnn'] / at[impl]:.1f}× as long "
        f"as feed-forward attention with `model.impl={impl}`, and "
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


def own_reference_ratios(records: list[dict]) -> list[str]:
    """Per T0, each REFERENCE_OF case against its readable form, time and memory."""
    lines = []
    for r in records:
        ref = reference_of(records, r) if r["case"] in REFERENCE_OF else None
        if ref is not None:
            lines.append(
                f"At T0 = {r['T0']}, one `{r['case']}` update takes {r['s_per_update'] * 1e3:.0f} "
                f"ms, {times(ref['s_per_update'] / r['s_per_update'])} faster than its readable "
                f"form `{ref['case']}` ({ref['s_per_update'] * 1e3:.0f} ms), with "
                f"{r['peak_mb']:.0f} MB at its peak against {ref['peak_mb']:.0f} MB."
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


def header(bench: Bench) -> list[str]:
    """The title, the command that regenerates the page, and where and when it was measured."""
    gpu = bench.machine.get("cuda") if bench.device == "cuda" else None
    return [
        "# Performance" + (f" on a GPU: {gpu}" if gpu else ""),
        "",
        "Generated by `bench/throughput.py`; do not edit by hand. Regenerate with",
        "",
        f"    {bench.command}",
        "",
        f"- date: {bench.date:%Y-%m-%d %H:%M} UTC; commit: {bench.commit}",
        f"- machine: {json.dumps(bench.machine)}; {bench.platform}",
        f"- threads: {bench.threads}; device: {bench.device}" + (f" ({gpu})" if gpu else ""),
        f"- float32 matmul peak of the device measured in this run: {bench.peak:.1f} GFLOP/s",
        f"- whole benchmark: {bench.seconds:.0f} s",
        *([f"- {bench.note}"] if bench.note else []),
        "",
        f"B = {bench.batch}, D = 100 (the attention models: D = 64, two layers, span 64; Mamba: "
        "D = 64, two layers, N = 16, E = 128; conf/model/), addition task, float32. Ratios are "
        "against the reference implementation at the same T0 (Mamba's, GLA's and DeltaNet's: "
        "their own reference forms, <model>_reference), measured in this run.",
    ]


def document(bench: Bench, method: str) -> str:
    """The whole page; `method` is the closing section on how it is measured."""
    lines = [
        *header(bench),
        "",
        *table(bench),
        "",
        *rnn_ratio(bench.records, max(bench.data)),
        "",
        *feedback_ratio(bench.records),
        "",
        *own_reference_ratios(bench.records),
        "",
        *(runs_section(bench.runs) if bench.runs else []),
        "",
        *([bench.runs_note, ""] if bench.runs_note else []),
        "## How it is measured",
        "",
        method,
        "",
    ]
    return "\n".join(lines)
