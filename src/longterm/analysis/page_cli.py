"""The command line every page generator shares: directories of runs in, one Markdown page out
(or printed), e.g. `python -m longterm.experiments.recall.page runs/recall --out docs/recall.md`."""

import argparse
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from longterm.analysis.arguments import summary
from longterm.analysis.identity import MixedSettingsError


def page_cli(
    doc: str,
    load: Callable[[list[Path]], pd.DataFrame],
    report: Callable[..., str],
    argv: list[str] | None = None,
    empty: str = "error",
    options: Iterable[tuple[str, dict[str, Any]]] = (),
) -> None:
    """Parse `dirs` and `--out` (and each of `options`: a flag and add_argument's keywords),
    read the runs with `load` and write `report(runs, dirs, out, **options' values)`. Without
    runs: `empty="error"` exits with one line, `"warn"` warns and writes the page all the same
    (a page that says which runs it waits for)."""
    parser = argparse.ArgumentParser(description=summary(doc))
    parser.add_argument("dirs", nargs="+", type=Path, help="directories holding result.json")
    parser.add_argument("--out", type=Path, help="markdown file (default: print)")
    for flag, keywords in options:
        parser.add_argument(flag, **keywords)
    args = parser.parse_args(argv)
    runs = load(args.dirs)
    if runs.empty:
        where = ", ".join(map(str, args.dirs))
        if empty == "error":
            sys.exit(f"error: no result.json under {where}")
        print(f"warning: no finished runs under {where}", file=sys.stderr)
    extra = {k: v for k, v in vars(args).items() if k not in ("dirs", "out")}
    try:
        text = report(runs, args.dirs, args.out, **extra)
    except MixedSettingsError as e:  # a point would join runs of other settings
        sys.exit(f"error: {e}")
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out} ({len(runs)} runs)")
    else:
        print(text)
