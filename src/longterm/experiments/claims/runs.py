"""The claims sweep: the runs behind docs/claims.md (claims/page.py), and the time each kind of
its jobs takes per update, from which its budget is set (experiments/update_time.py).

    python -m longterm.experiments.claims.runs            # the sweep's commands
    python -m longterm.experiments.claims.runs --run      # run them, one per core, one thread
    python -m longterm.experiments.claims.runs --time 30  # seconds per update of every job kind
    python -m longterm.experiments.claims.runs --vocab    # the large table's size, derived
    python -m longterm.experiments.claims.page outputs/claims --out docs/claims.md

Every job is `python src/train.py experiment=claims ...` (conf/experiment/claims.yaml: T0, the
updates, the validation set, the sweep directory); a rerun fills in only what is missing. The
kinds of job (KINDS), each run for the seeds 1, 2, 3:
- Fan et al. (2020): the Feedback Transformer at 2 layers and the transformer at 2 and 4 layers,
  equal width (D = 64, 4 heads, d_ff = 64), on the algorithmic task (per-step targets);
- Sukhbaatar et al. (2019): the transformer (d_ff = 64), all-attention with N = 0 and N = 64
  persistent slots (N = d_ff: the transformer's parameter count exactly, models/transformer.py),
  on the fixed-knowledge task, on it with a table too large for the embedding and the head
  (`knowledge_vocab`), and on the algorithmic task (the 2-layer transformer's algorithmic runs are
  shared with the first claim).

The budget is worked out in the header of conf/experiment/claims.yaml: seconds per update measured
with `--time`, times the updates of every job, over two processes (COMMANDS: taken in order,
each process the next when its own ends, experiments/command_queue.py).
"""

import argparse
import math
import os
import shlex
from pathlib import Path

import torch

from longterm.analysis.arguments import at_least, summary
from longterm.experiments.command_queue import run, show
from longterm.experiments.update_time import experiment_config, seconds_per_update
from longterm.tasks.knowledge import CLASSES, LARGE_VOCAB

TRAIN_PY = Path(__file__).resolve().parents[3] / "train.py"
SEEDS = "seed=1,2,3"
ALGORITHMIC, KNOWLEDGE = "task=algorithmic", "task=fixed_knowledge"
LARGE = f"task.params.vocab={LARGE_VOCAB}"
# Each kind of job: the overrides after `experiment=claims` (without the seeds).
KINDS = {
    "feedback": [ALGORITHMIC, "model=feedback"],
    "transformer": [ALGORITHMIC, "model=transformer"],
    "transformer L=4": [ALGORITHMIC, "model=transformer", "model.layers=4"],
    "all_attention N=0": [ALGORITHMIC, "model=all_attention", "model.n_persistent=0"],
    "all_attention N=64": [ALGORITHMIC, "model=all_attention", "model.n_persistent=64"],
    "transformer, knowledge": [KNOWLEDGE, "model=transformer"],
    "all_attention N=0, knowledge": [KNOWLEDGE, "model=all_attention", "model.n_persistent=0"],
    "all_attention N=64, knowledge": [KNOWLEDGE, "model=all_attention", "model.n_persistent=64"],
    "transformer, large table": [KNOWLEDGE, LARGE, "model=transformer"],
    "all_attention N=0, large table": [
        KNOWLEDGE,
        LARGE,
        "model=all_attention",
        "model.n_persistent=0",
    ],
    "all_attention N=64, large table": [
        KNOWLEDGE,
        LARGE,
        "model=all_attention",
        "model.n_persistent=64",
    ],
}
# The models that the fixed-knowledge claims compare: each has the same embedding and head.
KNOWLEDGE_MODELS = (
    ["model=transformer"],
    ["model=all_attention", "model.n_persistent=0"],
    ["model=all_attention", "model.n_persistent=64"],
)
# Allen-Zhu and Li (2024, "Physics of Language Models: Part 3.3, Knowledge Capacity Scaling Laws",
# arXiv 2404.05405): trained networks store at most about 2 bits of knowledge per parameter.
BITS_PER_PARAMETER = 2
# The sweep's jobs in the order two processes of one thread take them (conf/experiment/claims.yaml
# times them with `--time`): the first two side by side, then each process the next command when
# its own ends. The Feedback Transformer's, the longest, first.
COMMANDS = (
    "model=feedback task=algorithmic",
    "model=transformer task=algorithmic,fixed_knowledge",
    "model=transformer model.layers=4 task=algorithmic",
    "model=all_attention model.n_persistent=0,64 task=algorithmic,fixed_knowledge",
    f"model=transformer task=fixed_knowledge {LARGE}",
    f"model=all_attention model.n_persistent=64 task=fixed_knowledge {LARGE}",
    f"model=all_attention model.n_persistent=0 task=fixed_knowledge {LARGE}",
)


def commands() -> list[str]:
    """The sweep's `python src/train.py` command lines, in order."""
    script = os.path.relpath(TRAIN_PY)  # src/train.py from the repository
    return [f"python {script} experiment=claims {c} {SEEDS}" for c in COMMANDS]


def claims_config(overrides: list[str]):
    """conf/train.yaml under `experiment=claims` with these overrides, validated."""
    return experiment_config("claims", overrides)


def shared_parameters(model: list[str], vocab: int) -> int:
    """The parameters of the input embedding and the head of `model` on fixed_knowledge with
    `vocab` tokens: the parts every model of the claims has, where a table can be held whatever
    the layers between them (docs/tasks.md)."""
    from longterm.training.parts import build_model

    net = build_model(claims_config([KNOWLEDGE, f"task.params.vocab={vocab}", *model])).net
    return sum(p.numel() for part in (net.encoder.embed, net.head) for p in part.parameters())


def knowledge_vocab(bits_per_parameter: float = BITS_PER_PARAMETER) -> int:
    """The smallest vocabulary V whose table f(x_{t-1}, x_t), V^2 entries of log2(8) bits each,
    holds more than `bits_per_parameter` bits per parameter of the embedding and the head of any
    model the claims compare (`shared_parameters`, affine in V: V D + D for the embedding, the
    head's own): a table those parts cannot hold, which the layers' own weights (a feed-forward
    sublayer, persistent slots) must. docs/tasks.md gives the numbers."""
    bits = math.log2(CLASSES)
    lines = []  # (slope, intercept) of each model's shared parameters in V
    for model in KNOWLEDGE_MODELS:
        at16, at17 = shared_parameters(model, 16), shared_parameters(model, 17)
        lines.append((at17 - at16, at16 - 16 * (at17 - at16)))
    vocab = 2
    while any(vocab**2 * bits <= bits_per_parameter * (a * vocab + b) for a, b in lines):
        vocab += 1
    return vocab


def print_vocab_derivation() -> None:
    """The numbers behind `knowledge_vocab` (docs/tasks.md quotes them): the table's bits and
    each model's embedding and head at the derived V and at V - 1, and the parameters of the
    layers' own memories that can hold the table instead."""
    from longterm.training.parts import build_model

    vocab, bits = knowledge_vocab(), math.log2(CLASSES)
    print(f"knowledge_vocab() = {vocab} at {BITS_PER_PARAMETER} bits per parameter")
    for v in (vocab, vocab - 1):
        print(f"V = {v}: the table's {v**2:,} pairs hold {v**2 * bits:,.0f} bits")
        for model in KNOWLEDGE_MODELS:
            shared = shared_parameters(model, v)
            print(
                f"  {' '.join(model)}: embedding and head {shared:,} parameters, "
                f"{BITS_PER_PARAMETER * shared:,} bits"
            )
    large = [KNOWLEDGE, f"task.params.vocab={vocab}"]
    layers = build_model(claims_config([*large, "model=transformer"])).net.encoder.layers
    ff = sum(p.numel() for layer in layers for p in layer.ff.parameters())
    print(f"the transformer's feed-forward sublayers: {ff:,} parameters")
    slots = build_model(claims_config([*large, *KNOWLEDGE_MODELS[2]])).net.encoder.layers
    memory = sum(q.numel() for layer in slots for q in (layer.attn.mem_k, layer.attn.mem_v))
    print(f"all-attention's persistent keys and values (N = 64): {memory:,} parameters")


def time_kinds(updates: int) -> None:
    """Print each kind's seconds per update, one kind after the other."""
    print(f"seconds per update, {updates} updates each, {torch.get_num_threads()} thread(s):")
    for name, overrides in KINDS.items():
        seconds = seconds_per_update("claims", overrides, updates)
        print(f"  {name:32s} {seconds:.4f}", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=summary(__doc__))
    p.add_argument("--run", action="store_true", help="run the sweep")
    p.add_argument("--time", type=at_least(1), metavar="UPDATES", help="time every kind of job")
    p.add_argument(
        "--vocab", action="store_true", help="the numbers behind the large table's vocabulary"
    )
    args = p.parse_args(argv)
    if args.vocab:
        print_vocab_derivation()
    elif args.time is not None:
        torch.set_num_threads(1)
        time_kinds(args.time)
    elif args.run:
        run(commands(), "local", None)
    else:
        show([shlex.join(shlex.split(c)) for c in commands()])


if __name__ == "__main__":
    main()
