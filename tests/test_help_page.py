"""`python src/train.py --help` and docs/running.md's table of choices, both generated from conf/
(longterm.config.help_page): every conf file of a group a user picks appears in both with its
description, none that is not there, the default marked; the page answers before torch loads and
Hydra's own page stays `--hydra-help`."""

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import CONF, EXAMPLE, ROOT

from longterm.config.command_line import check
from longterm.config.help_page import (
    EXAMPLES,
    choices_table,
    group_choices,
    help_page,
    summary,
    with_table,
)

RUNNING = ROOT / "docs" / "running.md"
# A group holding only a default sets keys, not a choice; hydra/ is Hydra's own settings.
NOT_CHOICES = {"hydra", "trainer", "callbacks"}


def conf_files() -> dict[str, list[str]]:
    """Each group of conf/ that a user picks -> its conf files by name, read from the disk."""
    groups = {p.name: sorted(f.stem for f in p.glob("*.yaml")) for p in CONF.iterdir()}
    return {g: names for g, names in groups.items() if names and g not in NOT_CHOICES}


def test_every_conf_file_is_a_choice_with_a_description_and_nothing_else():
    listed = group_choices([CONF])
    assert {g: sorted(c) for g, c in listed.items()} == conf_files()
    for group, choices in listed.items():
        missing = [name for name, text in choices.items() if not text]
        assert not missing, f"conf/{group}: no leading comment to describe {missing}"


def test_the_table_in_docs_running_md_is_the_one_conf_gives():
    page = RUNNING.read_text()
    assert with_table(page, CONF) == page, (
        "docs/running.md's table of choices is not conf/'s: "
        "python -m longterm.config.help_page docs/running.md"
    )
    table = choices_table(CONF)
    for group, names in conf_files().items():
        row = next(r for r in table.splitlines() if r.startswith(f"| `{group}=` |"))
        assert sorted(v.strip("*`") for v in row.split(" | ")[-1].strip(" |").split(", ")) == names


def test_help_lists_every_choice_with_its_line_and_marks_the_default():
    for width in (80, 120):
        assert max(map(len, help_page(CONF, width=width).splitlines())) <= width
    page = help_page(CONF, width=100)
    for group, names in conf_files().items():
        block = page.split(f"\n{group}=  ", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
        assert sorted(line[4:].split()[0] for line in block) == names
    assert "\n  * addition " in page and "\n  * feedforward " in page
    assert "\n    lstm               LSTM, then the readout and the paper's head\n" in page
    assert "\n  T0=50 " in page and "\nExamples:\n" in page


def test_a_users_config_dir_adds_its_choices_marked():
    page = help_page(CONF, EXAMPLE / "conf", width=100)
    assert "\n  + gru  " in page and "\n  + ordered_difference  " in page
    assert "\n    lstm  " in page  # the built-ins still listed


def test_a_new_group_is_listed_after_the_known_ones(tmp_path: Path):
    for group, name, text in [
        ("sampler", "fast", "# @package _global_\n# One quick epoch. More.\n"),
        ("task", "copy", "# Copy, et al. 2023. More.\n"),
        ("trainer", "default", "# Lightning's Trainer.\n"),  # one default: keys, not a choice
    ]:
        (tmp_path / group).mkdir()
        (tmp_path / group / f"{name}.yaml").write_text(text)
    listed = group_choices([tmp_path])
    assert listed == {"task": {"copy": "Copy, et al. 2023"}, "sampler": {"fast": "One quick epoch"}}


@pytest.mark.parametrize(
    ("text", "room", "expected"),
    [
        ("LSTM (Hochreiter & Schmidhuber 1997), then the head", 80, "LSTM, then the head"),
        (
            "BaseConv: y = conv(u) * (W u + b) + u (zoology's)",
            80,
            "BaseConv: y = conv(u) * (W u + b) + u",
        ),
        ("Every architecture, on order, state and recall", 30, "Every architecture, on order…"),
        ("Hyena: gated long convolutions with implicit filters", 20, "Hyena: gated long…"),
    ],
)
def test_a_description_fits_its_line(text, room, expected):
    assert summary(text, room) == expected
    assert len(summary(text, room)) <= room


@pytest.mark.parametrize("command", [c for _, c in EXAMPLES], ids=[w for w, _ in EXAMPLES])
def test_the_examples_on_the_page_are_good_command_lines(command, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    words = shlex.split(command)
    assert words[:2] == ["python", "src/train.py"]
    check(words[2:], CONF)


HELP_WITHOUT_TORCH = f"""
import runpy, sys
sys.argv = [{str(ROOT / "src" / "train.py")!r}, "--help"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit as stop:
    assert stop.code in (0, None), stop.code
print("loaded:", sorted(m for m in ("torch", "pytorch_lightning") if m in sys.modules))
"""


def test_train_py_help_is_the_projects_page_and_loads_no_torch():
    out = subprocess.run(
        [sys.executable, "-c", HELP_WITHOUT_TORCH], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("Train one model on one long-term memory task")
    assert "\nmodel=  " in out.stdout and "powered by Hydra" not in out.stdout
    assert out.stdout.rstrip().endswith("loaded: []")


def test_hydra_help_is_still_hydras():
    out = subprocess.run(
        [sys.executable, str(ROOT / "src" / "train.py"), "--hydra-help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.startswith("Hydra (") and "--hydra-help" in out.stdout
