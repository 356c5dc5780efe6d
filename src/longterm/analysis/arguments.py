"""Arguments of the command-line tools (the page generators, the planners, the queue): a number
out of range fails before anything runs, in argparse's line naming the flag and what is allowed
(`argument --races: 0 is not allowed: give a whole number >= 1`); a tool's --help opens with the
first paragraph of its module's docstring (`summary`), whole."""

import argparse
from collections.abc import Callable


def summary(doc: str) -> str:
    """A --help's description: the first paragraph of the module docstring `doc` on one line,
    ended with a period where it leads into what follows (a colon)."""
    first = " ".join(doc.strip().split("\n\n")[0].split())
    return first.removesuffix(":") + "." if first.endswith(":") else first


def at_least(low: int) -> Callable[[str], int]:
    """An argparse type: a whole number of at least `low` (argparse names it by `__name__`)."""

    def whole_number(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(
                f"{value} is not allowed: give a whole number >= {low}"
            )
        return value

    return whole_number


def positive(text: str) -> float:
    """An argparse type: a number above 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:  # nan too
        raise argparse.ArgumentTypeError(f"{text} is not allowed: give a number > 0")
    return value
