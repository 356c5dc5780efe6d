"""The causal FFT convolution of S4D and Hyena (models/kernels/fft_conv.py) against the form it
replaces: `irfft(rfft(u, 2T) * rfft(k, 2T), 2T)` under autograd ("before"), the same form over
fft_length(2T) points ("length only"), and the written-out backward pass over fft_length(2T)
points ("now"). Each is timed forward and backward on u (B, D, T) and k (D, T) at S4D's width
(B = 100, D = 64; T the padded width of each T0), float32, on one thread (as a sweep's runs are),
the three forms in turns so that a load on the machine falls on each; the outputs and gradients
of "now" are compared with "before" (the largest difference over the largest magnitude). Every
ratio is between cases measured in this run.

    python bench/fft_conv.py --out docs/performance_fft_conv.md
"""

import statistics
import sys
import time
from collections.abc import Callable

import torch
from kernels import arguments, write_page

from longterm.models.kernels.fft_conv import causal_fft_conv, fft_length
from longterm.tasks import default_width

B, D = 100, 64  # S4D's batch and channels (conf/model/s4d.yaml, the experiments' batch)


def autograd_form(u: torch.Tensor, k: torch.Tensor, n: int) -> torch.Tensor:
    """The convolution as autograd differentiates it: rfft, product, irfft over n points."""
    T = u.shape[-1]
    return torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)[..., :T]


def forms(T: int) -> dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]]:
    """The three forms at width T, by name."""
    n = fft_length(2 * T)
    return {
        "before": lambda u, k: autograd_form(u, k, 2 * T),
        "length only": lambda u, k: autograd_form(u, k, n),
        "now": lambda u, k: causal_fft_conv(u, k),
    }


def compare(T: int, repeats: int) -> dict:
    """Median forward and backward ms of each form at width T, and now's largest relative
    difference from before (output, ∂u, ∂k)."""
    gen = torch.Generator().manual_seed(0)
    u = torch.randn(B, D, T, generator=gen, requires_grad=True)
    k = torch.randn(D, T, generator=gen, requires_grad=True)
    g = torch.randn(B, D, T, generator=gen)
    times: dict[str, tuple[list[float], list[float]]] = {}
    results: dict[str, list[torch.Tensor]] = {}
    for i in range(repeats + 1):  # the first pass untimed
        for name, conv in forms(T).items():
            u.grad = k.grad = None
            start = time.perf_counter()
            y = conv(u, k)
            middle = time.perf_counter()
            y.backward(g)
            end = time.perf_counter()
            if i:
                forward, backward = times.setdefault(name, ([], []))
                forward.append(middle - start)
                backward.append(end - middle)
            results[name] = [y.detach(), u.grad, k.grad]

    def relative(a: torch.Tensor, b: torch.Tensor) -> float:
        return ((a - b).abs().max() / b.abs().max()).item()

    error = max(relative(a, b) for a, b in zip(results["now"], results["before"], strict=True))
    ms = {name: [statistics.median(s) * 1e3 for s in pair] for name, pair in times.items()}
    return {"ms": ms, "error": error}


def main() -> int:
    args = arguments(__doc__, [50, 100, 1000, 10000], 5).parse_args()
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    rows = [
        "| T0 | T | points before → now | before: forward + backward, ms "
        "| length only, ms | now, ms | × length only | × now | now vs before |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for T0 in args.T0:
        T = default_width(T0)
        r = compare(T, args.repeats)
        total = {name: sum(pair) for name, pair in r["ms"].items()}
        (f0, b0), before = r["ms"]["before"], total["before"]
        rows.append(
            f"| {T0} | {T} | {2 * T} → {fft_length(2 * T)} | {f0:.1f} + {b0:.1f} "
            f"| {total['length only']:.1f} | {total['now']:.1f} "
            f"| {before / total['length only']:.2f} | {before / total['now']:.2f} "
            f"| {r['error']:.1e} |"
        )
        print(rows[-1], flush=True)
    more = (
        f" The median of {args.repeats} passes after one untimed; × is the time before over the"
        " time of the form (above 1: faster); the last column is the largest difference of now's"
        " output and gradients from before's, over before's largest magnitude."
    )
    title = "The causal FFT convolution of S4D and Hyena"
    write_page(args.out, title, started, args.note, __doc__, more, rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
