"""The choices a user picks, read from conf/: the page `python src/train.py --help` prints and the
table of choices in docs/running.md, one generator for both (a test holds both equal to conf/).

A config group a user picks is a folder of conf/ with a choice besides `default` (trainer/ and
callbacks/ hold one default each: their keys are set as dotted keys; hydra/ is Hydra's own
settings). Its choices are its conf files, a user's `--config-dir` included. A choice's
description is the first sentence of its conf file's leading comment. Reads files only: no
composition, no torch, so `--help` answers at once.

    python -m longterm.config.help_page docs/running.md   # rewrite the page's table from conf/
"""

import re
import shutil
import sys
from pathlib import Path

from omegaconf import OmegaConf

from longterm.config.builtins import CONF
from longterm.config.command_line import CONFIG_DIR_FLAGS
from longterm.config.validate import ConfigError

HELP_FLAGS = ("--help", "-h")
# What each group picks and its page in docs/; a group not named here is listed after these with
# its choices only, so that a new folder of conf/ shows up without a change here.
GROUPS = {
    "task": ("the problem: its data and labels", "tasks.md"),
    "model": ("the encoder: a state per step", "models.md"),
    "pool": ("the readout: how the head reads the states", "plugins.md"),
    "arch": ("a model and its readout by one name", None),
    "data": ("the lengths trained on", None),
    "experiment": ("a docs page's runs, by name", "reproducing.md"),
    "launcher": ("how and where a sweep's jobs run", "launchers.md"),
    "logger": ("what records a run's curves", "tensorboard.md"),
    "debug": ("a short run that checks the loop (status debug)", None),
}
NOT_PICKED = ("hydra",)  # Hydra's own settings of the run directory, not a choice
EXAMPLES = (
    ("the default run: addition, attention pooling, T0=50, lr 1e-3", "python src/train.py"),
    ("another task and model", "python src/train.py task=temporal_order model=lstm T0=100 seed=1"),
    ("a model and its readout by one name", "python src/train.py arch=transformer"),
    (
        "a sweep of 4 runs, one after another",
        "python src/train.py -m task=addition,multiplication lr=1e-3,3e-3",
    ),
    ("6 runs side by side", "python src/train.py -m launcher=parallel model=rnn,lstm seed=1,2,3"),
    (
        "the paper's grid, in a directory where the same command resumes it",
        "python src/train.py experiment=table1 hydra.sweep.dir=outputs/multirun/table1",
    ),
    ("the composed config, nothing trained", "python src/train.py --cfg job model=gla"),
)
MARK = "<!-- choices: from conf/ by `python -m longterm.config.help_page docs/running.md` -->"
END = "<!-- end of choices -->"
# A period that ends a sentence: then a space and no digit ("et al. 2023"), not "..", not an
# abbreviation.
SENTENCE_END = re.compile(
    r"(?<![.\s])(?<!\bal)(?<!\beq)(?<!\be\.g)(?<!\bi\.e)(?<!\bcf)(?<!\bvs)\.(?=\s+\D|\s*$)"
)
# An aside in words (a reference, a module's path), not an equation's parentheses: after a space,
# with a letter and none of = + * ^ |; innermost first.
ASIDE = re.compile(r"\s+\((?=[^()]*[A-Za-z])[^()=+*^|]*\)")


def description(conf_file: Path) -> str:
    """The first sentence of a conf file's leading comment (`# @package` left out); '' without
    one."""
    lines = []
    for line in conf_file.read_text().splitlines():
        if not line.startswith("#"):
            break
        if not line.startswith("# @package"):
            lines.append(line.lstrip("#").strip())
    text = " ".join(lines).strip()
    end = SENTENCE_END.search(text)
    return text[: end.start()] if end else text.rstrip(".")


def group_choices(config_dirs: list[Path]) -> dict[str, dict[str, str]]:
    """Each group a user picks -> its choices -> their descriptions, the groups of GROUPS first in
    its order, then the others by name; choices by name. A choice in two of `config_dirs` is
    described by the first."""
    found: dict[str, dict[str, str]] = {}
    for config_dir in reversed(config_dirs):
        for conf_file in sorted(config_dir.glob("*/*.yaml")):
            group = conf_file.parent.name
            if group not in NOT_PICKED:
                found.setdefault(group, {})[conf_file.stem] = description(conf_file)
    picked = {g: c for g, c in found.items() if set(c) != {"default"}}
    order = [g for g in GROUPS if g in picked] + sorted(set(picked) - set(GROUPS))
    return {g: dict(sorted(picked[g].items())) for g in order}


def defaults(config_dir: Path, config_name: str = "train") -> dict[str, str | None]:
    """The choice of each group in the primary config's defaults list (None: no choice)."""
    entries = OmegaConf.to_container(OmegaConf.load(config_dir / f"{config_name}.yaml")).get(
        "defaults", []
    )
    return {k: v for e in entries if isinstance(e, dict) for k, v in e.items()}


def top_level_keys(config_dir: Path, config_name: str = "train") -> list[tuple[str, str, str]]:
    """(key, default, comment) of each top-level key of the primary config with a comment on its
    line: T0, lr, seed."""
    line = re.compile(r"^(\w+):\s*([^\s#]+)\s*#\s*(.+)$")
    text = (config_dir / f"{config_name}.yaml").read_text()
    return [m.groups() for m in map(line.match, text.splitlines()) if m]


def summary(text: str, room: int) -> str:
    """`text` in at most `room` characters: its asides (references, paths) left out, then cut after
    its last clause that fits, or its last word, with an ellipsis."""
    while ASIDE.search(text):
        text = ASIDE.sub("", text)
    if len(text) <= room:
        return text
    cut = text[:room]  # a boundary at its end still leaves room for the ellipsis
    clause = max(cut.rfind(b) for b in ("; ", ", ", ": "))
    end = clause if clause >= room * 2 // 3 else cut.rfind(" ")
    return cut[: end if end > 0 else room - 1].rstrip(" ,;:") + "…"


def line(first: str, text: str, indent: int, width: int) -> str:
    """`first` padded to `indent` columns, then `text` in the rest of the line."""
    return f"{first:<{indent}}{summary(text, max(width - indent, 20))}".rstrip()


def choice_lines(config_dir: Path, extra_dir: Path | None, width: int) -> list[str]:
    """A paragraph per group: its name and what it picks, then a line per choice (* the default,
    + a choice of the user's `extra_dir`) with its description cut to the line."""
    dirs = [d for d in (extra_dir, config_dir) if d is not None and d.is_dir()]
    theirs = {p.relative_to(extra_dir) for p in extra_dir.rglob("*.yaml")} if extra_dir else set()
    chosen, out = defaults(config_dir), []
    for group, choices in group_choices(dirs).items():
        what, page = GROUPS.get(group, ("", None))
        notes = [f"{what} (docs/{page})" if page else what] if what else []
        if group in chosen and chosen[group] is None:
            notes.append("none by default")
        out += ["", f"{group}=  " + ", ".join(notes)]
        indent = 6 + max(map(len, choices))
        for name, text in choices.items():
            mark = "+" if Path(group, f"{name}.yaml") in theirs else " "
            mark = "*" if name == chosen.get(group) else mark
            out.append(line(f"  {mark} {name}", text, indent, width))
    return out


def help_page(config_dir: Path, extra_dir: Path | None = None, width: int = 100) -> str:
    """The text of `python src/train.py --help`: the choices of every group with the conf files
    in `config_dir` and a user's `--config-dir` (`extra_dir`), the defaults, the top-level keys and
    a few commands."""
    theirs = f"; + a choice of {extra_dir}" if extra_dir is not None else ""
    out = [
        "Train one model on one long-term memory task, or sweep many.",
        "",
        "usage: python src/train.py [-m] [--config-dir DIR] [group=choice] [key=value]...",
        "",
        f"Choices: group=choice reads conf/<group>/<choice>.yaml; * the default{theirs}.",
        *choice_lines(config_dir, extra_dir, width),
        "",
        "Keys and their defaults; any other is dotted: data.batches_per_epoch=200",
    ]
    keys = top_level_keys(config_dir)
    indent = 6 + max(len(k) + len(v) for k, v, _ in keys)
    out += [line(f"  {key}={value}", comment, indent, width) for key, value, comment in keys]
    out += ["", "Examples:"]
    for what, command in EXAMPLES:
        out += [f"  # {what}", f"  {command}"]
    out += [
        "",
        "Your own model, readout or task: --config-dir DIR with DIR/<group>/<name>.yaml",
        "(docs/plugins.md). Every choice, a run's directory and name: docs/running.md.",
        "Hydra's own page: --hydra-help.",
    ]
    return "\n".join(out) + "\n"


def choices_table(config_dir: Path) -> str:
    """docs/running.md's table of choices: a row per group, its values by name, the default in
    bold."""
    chosen = defaults(config_dir)
    rows = ["| choice | what it picks | values |", "|---|---|---|"]
    for group, choices in group_choices([config_dir]).items():
        what, page = GROUPS.get(group, ("", None))
        notes = [f"{what} ([{page}]({page}))" if page else what] if what else []
        if group in chosen and chosen[group] is None:
            notes.append("none by default")
        values = ", ".join(f"**`{c}`**" if c == chosen.get(group) else f"`{c}`" for c in choices)
        rows.append(f"| `{group}=` | {', '.join(notes)} | {values} |")
    return "\n".join(rows) + "\n"


def with_table(page: str, config_dir: Path) -> str:
    """`page` (Markdown) with the text between its marks replaced by choices_table."""
    start, end = page.index(MARK) + len(MARK), page.index(END)
    return page[:start] + "\n\n" + choices_table(config_dir) + "\n" + page[end:]


def config_dir_of(argv: list[str]) -> Path | None:
    """A user's `--config-dir DIR` (or `-cd DIR`, `--config-dir=DIR`) in `argv`."""
    for i, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        if flag in CONFIG_DIR_FLAGS:
            return Path(value) if equals else Path(argv[i + 1]) if i + 1 < len(argv) else None
    return None


def answer_help(argv: list[str], config_dir: Path) -> bool:
    """Print the help page if `argv` asks for it (--help, -h), with a user's --config-dir read
    (ConfigError if it is no directory); Hydra's own page stays `--hydra-help`."""
    if not any(arg in HELP_FLAGS for arg in argv):
        return False
    extra_dir = config_dir_of(argv)
    if extra_dir is not None and not extra_dir.is_dir():
        raise ConfigError(f"--config-dir={extra_dir} is invalid: no such directory")
    width = min(max(shutil.get_terminal_size((100, 24)).columns, 80), 120)
    print(help_page(config_dir, extra_dir, width), end="")
    return True


def main(argv: list[str]) -> None:
    """Rewrite the table of choices in each page named in `argv` from conf/."""
    if not argv:
        sys.exit(
            "error: give the pages to rewrite: python -m longterm.config.help_page docs/running.md"
        )
    for name in argv:
        page = Path(name)
        if not page.is_file() or MARK not in page.read_text():
            sys.exit(f"error: {name}: no page with the mark {MARK}")
        page.write_text(with_table(page.read_text(), CONF))


if __name__ == "__main__":
    main(sys.argv[1:])
