"""A change to the CPU kernels measured: each kernel built from its source at another commit
(--against) and from this tree's, forward and backward timed apart, in turns (the two builds
alternate, so a load on the machine falls on both), and their outputs and gradients compared bit
for bit. The kernels: gated linear attention's and the delta rule's
(models/kernels/linear_attention_cpu.cpp, at the shapes of bench/kernels.py) and Mamba's selective
scan (models/kernels/selective_scan_cpu.cpp, at mamba's defaults: B = 100, E = 2 D = 128, N = 16),
float32, on one thread (as a sweep's runs are). Every ratio is between cases measured in this run.

    python bench/kernel_change.py --against 0753701 --out docs/performance_kernel_change.md
"""

import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import torch
from kernels import B, arguments, inputs, write_page
from torch.nn import functional as F

from longterm.models.kernels import linear_attention_cpu, selective_scan_cpu
from longterm.tasks import default_width

ROOT = Path(__file__).resolve().parents[1]
MODULES = {"gla": linear_attention_cpu, "delta": linear_attention_cpu, "scan": selective_scan_cpu}
# The selective scan's channels and state at mamba's defaults (conf/model/mamba.yaml).
E, N = 128, 16

# One pass of a kernel: (module, inputs) -> the forward pass's outputs (saved for the backward)
# and the backward pass's gradients from them.
Forward = Callable[[ModuleType, list[torch.Tensor]], tuple]
Backward = Callable[[ModuleType, list[torch.Tensor], tuple], tuple]


def scan_inputs(T: int) -> list[torch.Tensor]:
    """u, Δ (B, T, E), A (E, N), B, C (B, T, N), D (E), as a Mamba block makes them."""
    u, delta = torch.randn(B, T, E), F.softplus(torch.randn(B, T, E))
    A = -torch.exp(torch.randn(E, N))
    return [u, delta, A, torch.randn(B, T, N), torch.randn(B, T, N), torch.randn(E)]


def passes(name: str) -> tuple[Forward, Backward]:
    """The kernel `name`'s forward and backward calls."""
    if name == "scan":
        return (
            lambda m, x: m.forward(*x),
            lambda m, x, out: m.backward(out[0], *x, out[1]),
        )
    return (
        lambda m, x: m.forward(name, *x),
        lambda m, x, out: m.backward(name, out[0], *x, out[1]),
    )


def built_from(module: ModuleType, source: Path) -> ModuleType:
    """A second copy of `module` whose kernels are built from `source` (a hash of the source names
    a build, so the two never share one)."""
    spec = importlib.util.spec_from_file_location(f"{module.__name__}_then", module.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    copy.SOURCE = source
    return copy


def source_at(rev: str, module: ModuleType, folder: Path) -> Path:
    """The kernel source of `module` as it was at commit `rev`, written under `folder`: at its path
    now, or in models/ itself at a commit from before models/kernels/ held the kernels."""
    relative = module.SOURCE.relative_to(ROOT)
    here = ["git", "cat-file", "-e", f"{rev}:{relative.as_posix()}"]
    if subprocess.run(here, cwd=ROOT, capture_output=True).returncode != 0:
        relative = relative.parent.parent / relative.name
    text = subprocess.run(
        ["git", "show", f"{rev}:{relative}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = folder / module.SOURCE.name
    path.write_text(text)
    return path


def compare(name: str, T: int, old: Path, repeats: int) -> dict:
    """Median ms of the forward and backward passes of the build from `old` and of this tree's,
    and whether every output and gradient is equal bit for bit."""
    torch.manual_seed(0)
    x = scan_inputs(T) if name == "scan" else [t.detach() for t in inputs(name, T)]
    forward, backward = passes(name)
    builds = {"then": built_from(MODULES[name], old), "now": MODULES[name]}
    times = {"then": ([], []), "now": ([], [])}
    results = {}
    for repeat in range(repeats + 1):  # the first of each untimed (it builds the kernel)
        for build, module in builds.items():
            start = time.perf_counter()
            out = forward(module, x)
            middle = time.perf_counter()
            grads = backward(module, x, out)
            end = time.perf_counter()
            if repeat:
                times[build][0].append(middle - start)
                times[build][1].append(end - middle)
            results[build] = [out[0], *grads]
    ms = {b: [statistics.median(s) * 1e3 for s in pair] for b, pair in times.items()}
    equal = all(torch.equal(a, b) for a, b in zip(results["then"], results["now"], strict=True))
    return {"ms": ms, "equal": equal}


def main() -> int:
    parser = arguments(__doc__, [50, 1000], 5)
    parser.add_argument("--against", required=True, help="the commit whose kernels to measure")
    parser.add_argument("--kernels", nargs="+", default=list(MODULES), choices=list(MODULES))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    rev = subprocess.run(
        ["git", "rev-parse", "--short", args.against], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    if not rev:
        print(f"bench/kernel_change.py: --against {args.against} is not a commit here")
        return 2
    rows = [
        f"| kernel | T0 | T | forward at {rev}, ms | forward now, ms | forward × "
        f"| backward at {rev}, ms | backward now, ms | backward × | bit for bit |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as folder:
        for name in args.kernels:
            old = source_at(rev, MODULES[name], Path(folder))
            for T0 in args.T0:
                T = default_width(T0)
                r = compare(name, T, old, args.repeats)
                (f0, b0), (f1, b1) = r["ms"]["then"], r["ms"]["now"]
                rows.append(
                    f"| {name} | {T0} | {T} | {f0:.2f} | {f1:.2f} | {f0 / f1:.2f} | {b0:.2f} "
                    f"| {b1:.2f} | {b0 / b1:.2f} | {'equal' if r['equal'] else 'DIFFERENT'} |"
                )
                print(rows[-1], flush=True)
    more = (
        f" The median of {args.repeats} passes after one untimed; × is the time at {rev} over"
        " the time now (above 1: faster now)."
    )
    write_page(args.out, "A change to the CPU kernels", started, args.note, __doc__, more, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
