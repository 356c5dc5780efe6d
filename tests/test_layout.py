"""The package's layout: dependencies point one way (docs/design in shared DESIGN.md).

The training core (everything at the top of `longterm/`, with tasks/ and models/) never imports
analysis/ or experiments/; analysis never imports experiments; the allowed values of every choice
live in one module with no imports; only run.py and preflight.py know Hydra; and the analysis
loads Lightning only through the module that evaluates checkpoints.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "src" / "longterm"
JOBS = ("analysis", "experiments")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every module an `import` or `from ... import` in the file names, at any depth."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
    return names


def modules(where: Path) -> dict[str, set[str]]:
    return {module_name(p): imported(p) for p in sorted(where.rglob("*.py"))}


def in_job(name: str, job: str) -> bool:
    return name == f"longterm.{job}" or name.startswith(f"longterm.{job}.")


CORE = {
    name: names
    for name, names in modules(PACKAGE).items()
    if not any(in_job(name, job) for job in JOBS)
}


def test_the_tree_has_its_jobs():
    assert {"longterm.training.run", "longterm.tasks", "longterm.models"} <= set(CORE)
    analysis = modules(PACKAGE / "analysis")
    assert {"longterm.analysis.collect", "longterm.analysis.evaluate"} <= set(analysis)
    assert "longterm.experiments.lr_race" in modules(PACKAGE / "experiments")


@pytest.mark.parametrize("job", JOBS)
def test_the_core_never_imports_analysis_or_experiments(job):
    crossing = {m: sorted(n for n in names if in_job(n, job)) for m, names in CORE.items()}
    assert {m: names for m, names in crossing.items() if names} == {}


def test_analysis_never_imports_the_experiments():
    analysis = modules(PACKAGE / "analysis")
    crossing = {m: sorted(n for n in ns if in_job(n, "experiments")) for m, ns in analysis.items()}
    assert {m: names for m, names in crossing.items() if names} == {}


def test_the_choices_module_imports_nothing():
    assert imported(PACKAGE / "choices.py") == set()
    readers = [
        m for m, names in CORE.items() if any(n.startswith("longterm.choices") for n in names)
    ]
    assert {"longterm.config.validate", "longterm.training.batches", "longterm.models.init"} <= set(readers)


def test_only_run_preflight_and_the_multirun_callbacks_know_hydra():
    """The command line (preflight, and the compositions it shares with the sweeper), a run
    (run) and the callbacks Hydra calls around a multirun (multirun): nothing else of the core
    depends on Hydra."""
    knowing = sorted(m for m, names in CORE.items() if any(n.startswith("hydra") for n in names))
    assert knowing == [
        "longterm.config.compositions",
        "longterm.sweeps.multirun",
        "longterm.config.command_line",
        "longterm.training.run",
    ]


def test_the_analysis_loads_lightning_only_to_evaluate_a_checkpoint():
    """Import every analysis module but `evaluate` in a fresh interpreter: no Lightning."""
    names = sorted(m for m in modules(PACKAGE / "analysis") if not m.endswith(".evaluate"))
    code = "import sys\n" + "".join(f"import {m}\n" for m in names)
    code += "print(sorted(m for m in sys.modules if m.split('.')[0].endswith('lightning')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
