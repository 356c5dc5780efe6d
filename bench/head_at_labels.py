"""The head only where there are labels, on multi-query associative recall (zoology's Figure 2):
one update (forward, backward, optimizer step) of the Figure-2 attention model through the
framework's module with the vocabulary head at every step (before: the full (B, T, V) logits,
the loss over the labelled steps) and at the labelled steps only (after: training/module.py's
`labelled`), time and peak memory; then the same update beside a plain PyTorch model of the same
shapes written apart from the framework (below: PlainAttention). Writes
docs/performance_recall.md. A benchmark, not a test: every ratio is taken between figures
measured in the same run, one thread.

    python bench/head_at_labels.py                          # the page, batch 512
    python bench/head_at_labels.py --batch 64 --updates 2 --out /tmp/recall.md

Rows: vocab 8192, L = 64 (4 key-value pairs: 4 labelled steps a sequence) and L = 256 (16 pairs),
d = 64 and 128, `--batch` sequences an update. The batch is the one training draws
(training/batches.py: FixedLengthBatches), int(ceil(1.1 L)) steps wide with the padding masked;
the model, defined for L = max_positions steps, runs on the first L (models/bounded.py), and so
does the plain model. Ours is the run's module as `src/train.py` builds it (`arch=zoology_attention
optim.name=adamw optim.weight_decay=0.1`, zoology's optimizer; its schedule changes no cost), its
update the training step's `step_loss`, backward and the optimizer's step; the plain model has
the same dropouts as ours (zoology's: 0.1 on the embedded input and on the attention weights,
through scaled_dot_product_attention's dropout_p, which leaves its fused CPU kernel for the
matrix form), AdamW (lr 1e-3, weight decay 0.1), the head at the labelled steps too; the last
two columns set both models' dropouts to 0.

Time: the median of `--updates` updates after `--warmup` (the first creates the optimizer's
state), in one fresh process per row that takes the variants' updates in turn (round-robin), so
that each ratio is taken under the same load of a shared machine; the before variant at L = 256
times `--slow-updates` updates (each is tens of seconds).

Peak memory: in another fresh process, the peak resident memory during one update after the
warm-up above the resident memory before it (Linux's VmHWM, reset through /proc/self/clear_refs;
malloc returns blocks of 64 kB or more to the system at once, so freed tensors do not hide in the
baseline): what the update allocates on top of the model, its optimizer state and the batch. A
row whose full logits would not fit the memory available is left out of the before column (—),
and the page says so.
"""

import argparse
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
from throughput import peak_mb
from torch import Tensor, nn
from torch.nn import functional as F

from longterm.tasks import NO_TARGET
from longterm.training.batches import TRAIN, FixedLengthBatches, batch_rng
from longterm.training.module import MemoryTaskModule
from longterm.training.parts import build_model

ROOT = Path(__file__).resolve().parent.parent
VOCAB = 8192
SHAPES = [(64, 64), (64, 128), (256, 64), (256, 128)]  # (L, d)
VARIANTS = ("before", "after", "plain", "after_no_dropout", "plain_no_dropout")
NO_DROPOUT = ["model.attn_dropout=0", "model.embed_dropout=0"]
ARCH = ["arch=zoology_attention", "optim.name=adamw", "optim.weight_decay=0.1"]  # zoology's
METHOD = "\n\n".join(__doc__.strip().split("\n\n")[2:])  # "How it is measured"


def config(L: int, d: int, more: list[str] = []):  # noqa: B006  read, never changed
    """The composed config `src/train.py` would run for the row (L, d)."""
    overrides = [*ARCH, "task=mqar", f"T0={L}", f"task.params.vocab={VOCAB}"]
    overrides += [f"task.params.kv_pairs={L // 16}", f"model.dim={d}", *more]
    with initialize_config_dir(str(ROOT / "conf"), version_base="1.3"):
        return compose("train", overrides=overrides)


def training_batch(cfg, L: int, batch: int) -> tuple[Tensor, Tensor, Tensor]:
    recipe = FixedLengthBatches(cfg.task.generator, L, batch, "per_sequence", cfg.task.params)
    return recipe(batch_rng(0, TRAIN, 0, 0))


class Block(nn.Module):
    """zoology's TransformerBlock with the Identity state mixer, written plainly: r = h + r,
    r = r + W_o attn(LN_1(r)), h = LN_2(r); one head, causal, dropout p on the attention weights
    while training, no MLP."""

    def __init__(self, d: int, p: float):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out, self.p = nn.Linear(d, 3 * d), nn.Linear(d, d), p

    def forward(self, h: Tensor, r: Tensor | None) -> tuple[Tensor, Tensor]:
        r = h if r is None else h + r
        q, k, v = self.qkv(self.norm1(r)).unsqueeze(1).chunk(3, dim=-1)  # (B, 1, T, d) each
        p = self.p if self.training else 0.0
        a = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True).squeeze(1)
        r = r + self.out(a)
        return self.norm2(r), r


class PlainAttention(nn.Module):
    """Token + learned position embeddings (dropout `embed_p`), 2 blocks, final LayerNorm on
    h + r: zoology's Figure-2 attention model computed plainly; the head is the token
    embedding's transpose (tied). x (B, T) ids -> (B, T, d)."""

    def __init__(self, vocab: int, d: int, length: int, embed_p: float, attn_p: float):
        super().__init__()
        self.tokens, self.positions = nn.Embedding(vocab, d), nn.Embedding(length, d)
        self.drop = nn.Dropout(embed_p)
        self.blocks = nn.ModuleList(Block(d, attn_p) for _ in range(2))
        self.norm = nn.LayerNorm(d)

    def forward(self, x: Tensor) -> Tensor:
        h, r = self.drop(self.tokens(x) + self.positions(torch.arange(x.shape[1]))), None
        for block in self.blocks:
            h, r = block(h, r)
        return self.norm(h + r)

    def head(self, h: Tensor) -> Tensor:
        return F.linear(h, self.tokens.weight)


def optimizer_of(module: MemoryTaskModule) -> torch.optim.Optimizer:
    """The optimizer the run would step (configure_optimizers may add a schedule)."""
    made = module.configure_optimizers()
    if isinstance(made, dict):
        made = made["optimizer"]
    if isinstance(made, list | tuple):
        made = made[0][0] if isinstance(made[0], list | tuple) else made[0]
    return made


def update_of(variant: str, L: int, d: int, batch: int):
    """One update of `variant` on the row's batch, as a function of nothing."""
    cfg = config(L, d, NO_DROPOUT if variant.endswith("no_dropout") else [])
    x, y, mask = training_batch(cfg, L, batch)
    torch.manual_seed(0)
    if not variant.startswith("plain"):
        module = build_model(cfg).train()
        optimizer = optimizer_of(module)
        if variant == "before":  # the head at every step: the full logits
            loss = lambda: module.loss(module(x, mask), y)  # noqa: E731
        else:
            loss = lambda: module.step_loss((x, y, mask))  # noqa: E731
    else:
        x, y = x[:, :L], y[:, :L]  # the steps beyond L are padding
        model = PlainAttention(VOCAB, d, L, cfg.model.embed_dropout, cfg.model.attn_dropout)
        model.train()
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1)
        at = y != NO_TARGET
        loss = lambda: F.cross_entropy(model.head(model(x)[at]), y[at])  # noqa: E731

    def update() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss().backward()
        optimizer.step()

    return update


def measure(variants: list[str], L: int, d: int, args: argparse.Namespace, peak: bool) -> dict:
    """Time the variants' updates in this process, in turn (round-robin: every ratio is taken
    under the same load), or (`peak`) the peak memory of one update of the one variant."""
    updates = {v: update_of(v, L, d, args.batch) for v in variants}
    for _ in range(args.warmup):
        for update in updates.values():
            update()
    if peak:
        (update,) = updates.values()
        return {"peak_mb": peak_mb(update, "cpu")}
    times: dict[str, list[float]] = {v: [] for v in variants}
    for i in range(args.updates):
        for v, update in updates.items():
            if i < timed(v, L, args):
                start = time.perf_counter()
                update()
                times[v].append(time.perf_counter() - start)
    return {
        v: {"ms": 1e3 * statistics.median(t), "times_ms": [1e3 * x for x in t]}
        for v, t in times.items()
    }


def timed(variant: str, L: int, args: argparse.Namespace) -> int:
    return args.slow_updates if variant == "before" and L >= 256 else args.updates


def child(variants: list[str], L: int, d: int, args: argparse.Namespace, peak: bool) -> dict:
    """`measure` in a fresh process (the peak with malloc returning large blocks at once)."""
    cmd = [sys.executable, __file__, "--one", str(L), str(d), "--variants", *variants]
    cmd += ["--batch", str(args.batch), "--warmup", str(args.warmup)]
    cmd += ["--updates", str(args.updates), "--slow-updates", str(args.slow_updates)]
    cmd += ["--peak"] if peak else []
    env = dict(os.environ, OMP_NUM_THREADS="1")
    if peak:
        env |= {"MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "0"}
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"{variants} at L={L}, d={d} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise KeyError("MemAvailable")


def full_logits_fit(L: int, batch: int) -> bool:
    """Whether the before variant's float32 tensors of (B, width, V) (the logits, the
    log-softmax, the gradients: 3.3 of them at its peak, measured) fit in 90% of the memory
    available now."""
    width = -(-11 * L // 10)
    return 3.5 * batch * width * VOCAB * 4 < 0.9 * available_bytes()


def rows(args: argparse.Namespace) -> list[dict]:
    """Every shape, every variant timed and its peak measured, printed as it ends."""
    records = []
    for L, d in SHAPES:
        fits = full_logits_fit(L, args.batch)
        variants = [v for v in VARIANTS if fits or v != "before"]
        r = {"L": L, "d": d, "before": None} | child(variants, L, d, args, False)
        for variant in [v for v in variants if v in ("before", "after")]:
            r[variant] |= child([variant], L, d, args, True)
        for variant in VARIANTS:
            print(f"L={L} d={d} {variant}: {r[variant]}", flush=True)
        records.append(r)
    return records


def ratio(a: float | None, b: float | None) -> str:
    return "—" if a is None or b is None else f"{a / b:.2f}×"


def cell(record: dict | None, key: str, fmt: str = "{:,.0f}") -> str:
    return "—" if record is None else fmt.format(record[key])


def tables(records: list[dict]) -> list[str]:
    """The before/after table and the ours/plain table, markdown."""
    lines = [
        "## The head at every step (before) and at the labelled steps only (after)",
        "",
        "| L | d | labelled steps | ms / update before | after | before ÷ after "
        "| peak MB before | after | before ÷ after |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        b, a = r["before"], r["after"]
        lines.append(
            f"| {r['L']} | {r['d']} | {r['L'] // 16} of {r['L']} | {cell(b, 'ms')} | "
            f"{cell(a, 'ms')} | {ratio(b and b['ms'], a['ms'])} | {cell(b, 'peak_mb')} | "
            f"{cell(a, 'peak_mb')} | {ratio(b and b['peak_mb'], a['peak_mb'])} |"
        )
    lines += [
        "",
        "## Ours (the framework's module, head at labels) beside a plain PyTorch model",
        "",
        "| L | d | ms / update ours | plain | ours ÷ plain | ours, no dropout | plain, no dropout "
        "| ours ÷ plain, no dropout |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        ours, plain = r["after"]["ms"], r["plain"]["ms"]
        ours0, plain0 = r["after_no_dropout"]["ms"], r["plain_no_dropout"]["ms"]
        lines.append(
            f"| {r['L']} | {r['d']} | {ours:,.0f} | {plain:,.0f} | {ratio(ours, plain)} | "
            f"{ours0:,.0f} | {plain0:,.0f} | {ratio(ours0, plain0)} |"
        )
    return lines


def cpu_model() -> str:
    out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
    names = [line.split(":", 1)[1].strip() for line in out.splitlines() if "Model name" in line]
    return names[0] if names else platform.processor()


def commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout

    dirty = git("status", "--porcelain", "--untracked-files=no").strip()
    return git("rev-parse", "--short", "HEAD").strip() + (
        " (with uncommitted changes)" if dirty else ""
    )


def page(records: list[dict], args: argparse.Namespace, seconds: float, load: list[float]) -> str:
    model = " ".join(ARCH)
    skipped = [f"L = {r['L']}, d = {r['d']}" for r in records if r["before"] is None]
    left_out = "; ".join(skipped)
    lines = [
        "# The head at the labelled steps: multi-query associative recall",
        "",
        "Generated by `bench/head_at_labels.py`; do not edit by hand. Regenerate with",
        "",
        f"    {shlex.join(['python', 'bench/head_at_labels.py', *sys.argv[1:]])}",
        "",
        f"- date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC; commit: {commit()}",
        f"- machine: {cpu_model()}, {os.cpu_count()} cores; torch {torch.__version__}; one thread",
        f"- whole benchmark: {seconds:.0f} s; the machine's load average (1 minute) at its start "
        f"and end: {load[0]:.1f}, {load[1]:.1f} (other work shares the cores)",
        *([f"- {args.note}"] if args.note else []),
        "",
        f"The model: `{model}` (task=mqar, vocab {VOCAB}, kv_pairs L / 16), batch {args.batch}, "
        f"float32, {args.warmup} warm-up update(s) and the median of {args.updates} timed "
        f"({args.slow_updates} for the head at every step at L = 256).",
        *(
            [f"Left out of the before column (too large for the memory): {left_out}."]
            if skipped
            else []
        ),
        "",
        "The plain model computes the same function as zoology's (each block's second LayerNorm, "
        "its TransformerBlock's norm2, whose output the next block adds to the residual stream, "
        "included), written in plain PyTorch on the first L steps; ours also embeds the padded "
        "steps of the framework's batch before its model drops them.",
        "",
        *tables(records),
        "",
        "## How it is measured",
        "",
        METHOD,
        "",
    ]
    return "\n".join(lines)


def parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--batch", type=int, default=512, help="sequences an update")
    p.add_argument("--warmup", type=int, default=1, help="updates before the timed ones")
    p.add_argument("--updates", type=int, default=5, help="updates timed (their median)")
    p.add_argument(
        "--slow-updates", type=int, default=2, help="updates timed, the head at every step, L 256"
    )
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "performance_recall.md")
    p.add_argument("--note", default="", help="a line on the machine, e.g. its load")
    p.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)  # L d, in a child process
    p.add_argument("--variants", nargs="+", choices=VARIANTS, help=argparse.SUPPRESS)
    p.add_argument("--peak", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args()


def main() -> None:
    args = parse()
    torch.set_num_threads(1)
    if args.one:
        print(json.dumps(measure(args.variants, *args.one, args, args.peak)))
        return
    started, load = time.perf_counter(), [os.getloadavg()[0]]
    records = rows(args)
    load.append(os.getloadavg()[0])
    text = page(records, args, time.perf_counter() - started, load)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
