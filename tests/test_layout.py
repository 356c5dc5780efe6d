"""The package's layout (../shared DESIGN.md, "Layout"): one subpackage per concern, dependencies
pointing one way, and the libraries each concern may know.

The rules are stated per subpackage, not per module, so that a new module of a subpackage follows
them without a change here:

    choices <- plugins <- tasks <- models <- config <- training <- sweeps
    store: a leaf that everything may use; analysis: anything but experiments; experiments: any.

Lightning is known to training and sweeps (and analysis only to evaluate a checkpoint); Hydra to
config, training and sweeps; every private call into Lightning lives in one module, and every
`hydra._internal` import in another.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

PACKAGE = ROOT / "src" / "longterm"

# subpackage (or top-level module) -> the others it may import
MAY_IMPORT = {
    "choices": set(),
    "store": set(),
    "plugins": {"choices"},
    "tasks": {"choices", "plugins"},
    "models": {"choices", "plugins", "tasks"},
    "config": {"choices", "plugins", "tasks", "models", "store"},
    "training": {"choices", "plugins", "tasks", "models", "config", "store"},
    "sweeps": {"choices", "plugins", "tasks", "models", "config", "store", "training"},
    "analysis": {"choices", "plugins", "tasks", "models", "config", "store", "training"},
    "experiments": {
        *("choices", "plugins", "tasks", "models", "config", "store", "training", "analysis"),
        "sweeps",
    },
}
LIGHTNING = ("pytorch_lightning", "lightning_fabric", "lightning", "torchmetrics")
KNOW_LIGHTNING = {"training", "sweeps", "experiments"}  # and analysis.evaluate
KNOW_HYDRA = {"config", "training", "sweeps", "experiments"}
PRIVATE_LIGHTNING = "longterm.training.library_internals"
PRIVATE_HYDRA = "longterm.config.hydra_internals"
MAX_LINES = 400


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def concern(module: str) -> str:
    """`longterm.training.run` -> `training`; `longterm.choices` -> `choices`."""
    return module.split(".")[1] if "." in module else module


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if p.parent != PACKAGE}
MODULES |= {module_name(p): p for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}


def imports(path: Path, top_level_only: bool = False) -> set[str]:
    """Every module an `import` or `from ... import` in the file names (at any depth, or only at
    the module's top level)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_every_module_is_in_a_subpackage_with_a_docstring():
    top = sorted(p.name for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
    assert top == ["choices.py"]
    folders = sorted(p for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__")
    assert {p.name for p in folders} == set(MAY_IMPORT) - {"choices"}
    for folder in folders:
        init = folder / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text())), folder.name


def test_dependencies_point_one_way():
    crossing = {
        module: sorted(
            name
            for name in imports(path)
            if name.startswith("longterm.")
            and concern(name) != concern(module)
            and concern(name) not in MAY_IMPORT[concern(module)]
        )
        for module, path in MODULES.items()
    }
    assert {m: names for m, names in crossing.items() if names} == {}


def test_the_choices_module_imports_nothing():
    assert imports(PACKAGE / "choices.py") == set()


def test_no_module_is_over_four_hundred_lines():
    lengths = {m: len(p.read_text().splitlines()) for m, p in MODULES.items()}
    assert {m: n for m, n in lengths.items() if n > MAX_LINES} == {}


def knows(library: tuple[str, ...] | str, path: Path, top_level_only: bool = False) -> bool:
    prefixes = (library,) if isinstance(library, str) else library
    return any(n.split(".")[0] in prefixes for n in imports(path, top_level_only))


def test_only_training_and_sweeps_know_lightning():
    """At import time; config checks the Trainer's arguments and accelerators inside the
    function that needs them (config/machine_checks.py)."""
    knowing = {m for m, p in MODULES.items() if knows(LIGHTNING, p, top_level_only=True)}
    allowed = {m for m in knowing if concern(m) in KNOW_LIGHTNING}
    assert knowing - allowed <= {"longterm.analysis.evaluate"}


def test_only_config_training_and_sweeps_know_hydra():
    knowing = {m for m, p in MODULES.items() if knows("hydra", p)}
    assert {m for m in knowing if concern(m) not in KNOW_HYDRA} == set()


def test_hydra_internal_is_imported_in_one_module():
    src = ROOT / "src"
    users = {
        str(p.relative_to(src))
        for p in src.rglob("*.py")
        if any(n.startswith("hydra._internal") for n in imports(p))
    }
    assert users == {"longterm/config/hydra_internals.py"}


def private_attributes(path: Path) -> set[str]:
    """`x._name` in the file, where x is not `self` or `cls` (namedtuple's `_asdict` is public)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_"):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if not (own or node.attr.startswith("__") or node.attr in ("_asdict", "_replace")):
                found.add(node.attr)
    return found


def test_private_library_calls_live_in_one_module_each():
    using = {m: private_attributes(p) for m, p in MODULES.items()}
    using = {m: names for m, names in using.items() if names}
    assert set(using) == {PRIVATE_LIGHTNING, PRIVATE_HYDRA}
    lightning = imports(MODULES[PRIVATE_LIGHTNING])
    assert "pytorch_lightning.trainer" in lightning  # its private `call` module
    others = {m for m, p in MODULES.items() if "pytorch_lightning.trainer" in imports(p)}
    assert others == {PRIVATE_LIGHTNING}


@pytest.mark.parametrize("concern_", ["config", "store", "plugins", "tasks", "analysis"])
def test_these_concerns_load_no_lightning(concern_):
    """Import every module of the concern (analysis: but `evaluate`) in a fresh interpreter."""
    names = sorted(
        m for m in MODULES if concern(m) == concern_ and not m.endswith("analysis.evaluate")
    )
    code = "import sys\n" + "".join(f"import {m}\n" for m in names)
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] in " + repr(LIGHTNING) + "))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_tasks_load_neither_torch_nor_pydantic():
    """tasks/ is numpy only: a generator imported alone brings no framework with it."""
    code = "import sys, longterm.tasks\n"
    code += "print(sorted(m for m in ('torch', 'pydantic', 'omegaconf') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
