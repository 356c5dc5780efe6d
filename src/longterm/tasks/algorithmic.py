"""The algorithmic task of the Feedback Transformer (Fan et al. 2020, §4.1.2), written from its
published description: a stream of short programs over a few variables, and at every `print` the
printed value as the target of one step. docs/tasks.md gives the rules and how the task differs
from `variable_tracking`.

Tokens, one-hot over 25 symbols: the variables a b c d e (the first `variables` of them appear),
`#` (a program starts), `=`, `++`, `--`, `;`, `print`, `if`, `<`, `>`, `:`, and the constants 1..10.

A sequence of `length` tokens is a stream of programs, cut at `length`. A program is `#` and then
`statements` statements; at `#` every variable loses its value. Each statement's kind is drawn
with equal weight among the kinds that have a variable to name, and its variable uniformly among
those:
- `v = c ;`     v has no value yet (introduces v); c uniform on 1..10. The only kind a program can
                start with, and never drawn once every variable has a value;
- `v ++ ;`      v has a value below 10;
- `v -- ;`      v has a value above 1;
- `print v ;`   v has a value; the target of the `;` step is v's value (class value - 1);
- `if v < x : S` and `if v > x : S`   v has a value; x is another variable with a value or a
                constant uniform on 1..10, with probability 1/2 each (a constant when no other
                variable has a value); S is `w = c ;`, `w ++ ;` or `w -- ;` (equal weight among
                those with a variable to name), where w has a value: inside an `if`, `=` assigns
                anew and never introduces, so every variable has a value or has none at every
                step, whatever the conditions. S takes effect only when the condition holds; `++`
                and `--` are drawn only where the result stays in 1..10, so every value does.

Targets y (n, width) int64: value - 1 on the `;` that ends a `print`, NO_TARGET everywhere else.
The label sits one step after `print v`, where the printed value would be written, so a causal
model has read the variable's name before it answers; the value itself never appears as an
input. `replay` interprets a token stream independently of the generator (the tests check every
label with it; the evaluation groups accuracy by its annotations).
"""

from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from longterm.tasks.lengths import NO_TARGET, default_width, draw_lengths, one_hot

VARIABLES = ("a", "b", "c", "d", "e")
SYMBOLS = (*VARIABLES, "#", "=", "++", "--", ";", "print", "if", "<", ">", ":")
SYMBOLS += tuple(map(str, range(1, 11)))
START, ASSIGN, INC, DEC, END, PRINT, IF, LT, GT, THEN, ONE = (
    SYMBOLS.index(s) for s in ("#", "=", "++", "--", ";", "print", "if", "<", ">", ":", "1")
)
N_SYMBOLS = len(SYMBOLS)
LOW, HIGH = 1, 10  # the values
KINDS = ("assign", "inc", "dec", "print", "if_lt", "if_gt")  # statements, equal weight
BODY_KINDS = ("assign", "inc", "dec")  # what an `if` runs


def const(value: int) -> int:
    return ONE + value - LOW


def named(kind: str, values: list[int], body: bool = False) -> list[int]:
    """The variables a statement of `kind` may name; values[v] is 0 while v has no value."""
    if kind == "assign" and not body:
        return [v for v, x in enumerate(values) if not x]
    if kind == "inc":
        return [v for v, x in enumerate(values) if x and x < HIGH]
    if kind == "dec":
        return [v for v, x in enumerate(values) if x > LOW]
    return [v for v, x in enumerate(values) if x]


Option = TypeVar("Option")


def pick(rng: np.random.RandomState, options: list[Option]) -> Option:
    return options[rng.randint(len(options))]


def update(
    rng: np.random.RandomState, kind: str, values: list[int], body: bool
) -> tuple[list[int], int, int]:
    """`v = c ;`, `v ++ ;` or `v -- ;` on a variable `kind` may name: (tokens, v, new value)."""
    v = pick(rng, named(kind, values, body))
    if kind == "assign":
        c = rng.randint(LOW, HIGH + 1)
        return [v, ASSIGN, const(c), END], v, c
    step = 1 if kind == "inc" else -1
    return [v, INC if step == 1 else DEC, END], v, values[v] + step


def condition(rng: np.random.RandomState, kind: str, values: list[int]) -> tuple[list[int], bool]:
    """`if v < x :` or `if v > x :`: its tokens and whether it holds."""
    v = pick(rng, named(kind, values))
    others = [u for u in named("print", values) if u != v]
    if others and rng.randint(2):
        u = pick(rng, others)
        token, x = u, values[u]
    else:
        x = rng.randint(LOW, HIGH + 1)
        token = const(x)
    less = kind == "if_lt"
    holds = values[v] < x if less else values[v] > x
    return [IF, v, LT if less else GT, token, THEN], holds


def statement(rng: np.random.RandomState, values: list[int]) -> tuple[list[int], list[int]]:
    """One statement drawn for `values` (updated in place): its tokens and their targets."""
    kind = pick(rng, [k for k in KINDS if named(k, values)])
    if kind == "print":
        v = pick(rng, named(kind, values))
        return [PRINT, v, END], [NO_TARGET, NO_TARGET, values[v] - LOW]
    head, holds = [], True
    if kind.startswith("if"):
        head, holds = condition(rng, kind, values)
        kind = pick(rng, [k for k in BODY_KINDS if named(k, values, body=True)])
    tokens, v, value = update(rng, kind, values, body=bool(head))
    if holds:
        values[v] = value
    tokens = head + tokens
    return tokens, [NO_TARGET] * len(tokens)


def stream(
    rng: np.random.RandomState, length: int, statements: int, variables: int
) -> tuple[list[int], list[int]]:
    """Programs of `statements` statements over `variables` variables until `length` tokens:
    the first `length` tokens and their targets."""
    tokens, targets = [], []
    while len(tokens) < length:
        values = [0] * variables
        tokens.append(START)
        targets.append(NO_TARGET)
        for _ in range(statements):
            if len(tokens) >= length:
                break
            new, labels = statement(rng, values)
            tokens += new
            targets += labels
    return tokens[:length], targets[:length]


def algorithmic(
    rng: np.random.RandomState,
    min_length: int,
    n_sequences: int,
    max_length: int | None = None,
    statements: int = 8,
    variables: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Returns X (n, width, 25) float64 one-hot (zeros on padding), y (n, width) int64 (the
    printed value - 1 on the `;` of each `print`, NO_TARGET elsewhere), mask (n, width) bool."""
    if not 1 <= variables <= len(VARIABLES):
        raise ValueError(f"algorithmic: variables={variables} must be in 1..{len(VARIABLES)}")
    if statements < 1:
        raise ValueError(f"algorithmic: statements={statements} must be >= 1")
    n, width = n_sequences, max_length or default_width(min_length)
    lengths, mask = draw_lengths(rng, min_length, width, n)
    tokens = np.zeros((n, width), dtype=np.int64)
    y = np.full((n, width), NO_TARGET, dtype=np.int64)
    for i, length in enumerate(lengths):
        tokens[i, :length], y[i, :length] = stream(rng, int(length), statements, variables)
    return one_hot(tokens, N_SYMBOLS, mask), y, mask


@dataclass(frozen=True)
class Print:
    """A labelled step: the `;` of `print v ;` at `step`, the printed `value`, the print's
    `statement` index in its program (0 = the first), and what last changed v there:
    `assign` (its `v = c ;`), `step` (`++` or `--`), `if held` or `if not held` (the last
    statement to name v was an `if` whose body names it)."""

    step: int
    value: int
    statement: int
    last_write: str


def size(tokens: list[int], i: int) -> int:
    """Tokens of the statement that starts at i (its first tokens decide)."""
    if tokens[i] == PRINT:
        return 3
    if tokens[i] == IF:
        return 5 + (4 if i + 6 < len(tokens) and tokens[i + 6] == ASSIGN else 3)
    return 4 if i + 1 < len(tokens) and tokens[i + 1] == ASSIGN else 3


def run_update(tokens: list[int], values: dict[int, int], top_level: bool) -> tuple[int, int]:
    """`v = c ;`, `v ++ ;` or `v -- ;` read from `tokens`: (v, its new value); checks the rules."""
    v, op = tokens[0], tokens[1]
    if op == ASSIGN:
        if top_level == (v in values):
            raise ValueError(f"assignment to {VARIABLES[v]} breaks the introduction rule")
        new = tokens[2] - ONE + LOW
    else:
        new = values[v] + (1 if op == INC else -1)
    if not LOW <= new <= HIGH:
        raise ValueError(f"{VARIABLES[v]} leaves {LOW}..{HIGH}: {new}")
    return v, new


def replay(tokens: list[int]) -> list[Print]:
    """Interpret a token stream (one sequence's real steps) by the rules above: every print in
    it, in order; a statement cut by the end of the stream is ignored. Raises ValueError on a
    stream that breaks a rule (a variable used before it has a value, a value out of 1..10)."""
    values: dict[int, int] = {}
    last: dict[int, str] = {}
    prints, index, i = [], -1, 0
    while i < len(tokens):
        if tokens[i] == START:
            values, last, index, i = {}, {}, -1, i + 1
            continue
        n = size(tokens, i)
        if i + n > len(tokens):
            break
        s, index = tokens[i : i + n], index + 1
        try:
            if s[0] == PRINT:
                prints.append(Print(i + 2, values[s[1]], index, last[s[1]]))
            elif s[0] == IF:
                v, op, x = values[s[1]], s[2], s[3]
                x = values[x] if x < len(VARIABLES) else x - ONE + LOW
                holds = v < x if op == LT else v > x
                w, new = run_update(s[5:], values, top_level=False)
                values[w] = new if holds else values[w]
                last[w] = "if held" if holds else "if not held"
            else:
                v, values[v] = run_update(s, values, top_level=True)
                last[v] = "assign" if s[1] == ASSIGN else "step"
        except KeyError as e:
            raise ValueError(f"{VARIABLES[e.args[0]]} is used before it has a value") from None
        i += n
    return prints
