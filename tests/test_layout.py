"""The layout of src/ (../shared DESIGN.md, "Layout"): one subpackage of `longterm` per concern,
dependencies pointing one way, the libraries each concern may know, the launchers and the thin
entry points. Every rule is stated here once; the tests below hold the code to them.

- longterm/ holds choices.py and one subpackage per concern, each with a docstring saying what it
  holds. The rules are stated per subpackage, not per module, so that a new module follows them
  without a change here. A subpackage imports only those below it (MAY_IMPORT):

      choices <- plugins <- tasks <- models, config <- contract, training <- sweeps

  config knows no model; contract/ (a user's plugin checked by running small models) may use
  models and config; store is a leaf that imports no other concern and that every concern may
  use; analysis may use training and what it may; experiments may use all but contract.
- The libraries each may know: choices imports nothing at all; tasks/ is numpy only (no torch,
  pydantic or omegaconf when imported); config loads no torch and no model, so the command-line
  check answers a bad override before torch loads. Lightning (LIGHTNING) is imported at module
  level only by training, sweeps and experiments, and by analysis/evaluate.py (a checkpoint
  evaluated); config, store, plugins, tasks, models, contract and the rest of analysis load none.
  Hydra is known to config, training, sweeps and experiments (and to the launchers and the
  entry points).
- Private calls: every private call into Lightning lives in training/library_internals.py (its
  `pytorch_lightning.trainer.call` import too), every `hydra._internal` import in
  config/hydra_internals.py, so an upgrade of either library touches one file. A private name is
  `x._name`, `self._name` where a class deriving from a library's reads an attribute the library
  defines (LightningModule's `_trainer`), an import of a `_module`, or `from m import _name`. The
  private names of Hydra and its launcher plugins that src/hydra_plugins/ still uses are the
  exceptions, listed with where they are in PRIVATE_LEFT.
- src/hydra_plugins/ (the launchers and the sweeper; Hydra imports each of its modules while it
  composes a config, the command-line check's too) may import choices, config, store, training
  and sweeps of longterm (LAUNCHERS_MAY_IMPORT), what loads torch only inside the functions that
  run jobs: it loads neither torch nor Lightning at import. Nothing in longterm imports it.
- The entry points src/train.py and src/contract.py are thin: their top level imports only the
  standard library, Hydra, OmegaConf and longterm.config (the command-line check); the rest is
  imported inside main, after the check, so a bad override is answered with no torch loaded.
- No file of src/ is over 400 lines (MAX_LINES).
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import ROOT

SRC = ROOT / "src"
PACKAGE = SRC / "longterm"
ENTRY_POINTS = ("train.py", "contract.py")

# subpackage (or top-level module) -> the others it may import
MAY_IMPORT = {
    "choices": set(),
    "store": set(),
    "plugins": {"choices"},
    "tasks": {"choices", "plugins"},
    "models": {"choices", "plugins", "tasks"},
    "config": {"choices", "plugins", "tasks", "store"},
    "contract": {"choices", "plugins", "tasks", "models", "config", "store"},
    "training": {"choices", "plugins", "tasks", "models", "config", "store"},
    "sweeps": {"choices", "plugins", "tasks", "models", "config", "store", "training"},
    "analysis": {"choices", "plugins", "tasks", "models", "config", "store", "training"},
    "experiments": {
        *("choices", "plugins", "tasks", "models", "config", "store", "training", "analysis"),
        "sweeps",
    },
}
LAUNCHERS_MAY_IMPORT = {"choices", "config", "store", "training", "sweeps"}
LIGHTNING = ("pytorch_lightning", "lightning_fabric", "lightning", "torchmetrics")
KNOW_LIGHTNING = {"training", "sweeps", "experiments"}  # and analysis.evaluate
KNOW_HYDRA = {"config", "training", "sweeps", "experiments"}
PRIVATE_LIGHTNING = "longterm/training/library_internals.py"
PRIVATE_HYDRA = "longterm/config/hydra_internals.py"
# The private names of Hydra and its launcher plugins that src/hydra_plugins/ still uses, by file:
# the exceptions to the rule, each to go behind a public call or into config/hydra_internals.py
# (docs/development.md, "Library internals", lists them with what to check at an upgrade).
PRIVATE_LEFT = {
    # hydra-submitit-launcher's `_EXECUTOR`, the submitit executor a launcher class names (slurm,
    # local), which PackedSlurmLauncher and PackedLocalLauncher set as its own launchers do
    "hydra_plugins/longterm_launcher/submitit_packed.py": {"_EXECUTOR"},
}
MAX_LINES = 400


def module_name_of(file: str) -> str:
    """`longterm/training/run.py` -> `longterm.training.run` (a path under src/)."""
    parts = Path(file).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_name(path: Path) -> str:
    return module_name_of(path.relative_to(PACKAGE.parent).as_posix())


def concern(module: str) -> str:
    """`longterm.training.run` -> `training`; `longterm.choices` -> `choices`."""
    return module.split(".")[1] if "." in module else module


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py")) if p.parent != PACKAGE}
MODULES |= {module_name(p): p for p in PACKAGE.glob("*.py") if p.name != "__init__.py"}
# every Python file of src/ by its path there: the package, the launchers, the entry points
SOURCES = {p.relative_to(SRC).as_posix(): p for p in sorted(SRC.rglob("*.py"))}
LAUNCHERS = {f: p for f, p in SOURCES.items() if f.startswith("hydra_plugins/")}
TREES = {f: ast.parse(p.read_text()) for f, p in SOURCES.items()}


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


def test_no_file_of_src_is_over_four_hundred_lines():
    lengths = {f: len(p.read_text().splitlines()) for f, p in SOURCES.items()}
    assert {f: n for f, n in lengths.items() if n > MAX_LINES} == {}


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
    users = {
        f for f, p in SOURCES.items() if any(n.startswith("hydra._internal") for n in imports(p))
    }
    assert users == {PRIVATE_HYDRA}


def is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def base_name(node: ast.expr) -> str:
    """`L.LightningModule` -> `LightningModule`; `Generic[T]` -> `Generic`."""
    node = node.value if isinstance(node, ast.Subscript) else node
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def defined(cls: ast.ClassDef) -> set[str]:
    """What a class of src/ defines itself: its methods, its class attributes and what it sets
    on `self`."""
    names = set()
    for node in cls.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    for node in ast.walk(cls):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names |= {node.attr} if is_self(node.value) else set()
    return names


def class_table() -> dict[str, list[tuple[list[str], set[str]]]]:
    """Every class of src/ by its name: its bases' names and what it defines itself."""
    table: dict[str, list[tuple[list[str], set[str]]]] = {}
    for tree in TREES.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                entry = ([base_name(b) for b in node.bases], defined(node))
                table.setdefault(node.name, []).append(entry)
    return table


CLASSES = class_table()


def own_names(bases: list[str], names: set[str], seen: set[str]) -> tuple[set[str], bool]:
    """What a class with `bases` that defines `names` has of its own (its bases' of src/
    included), and whether it derives from a class of a library (a base not in src/, or one of
    the name of a class it derives from: `seen`)."""
    own, library = set(names), False
    for base in bases:
        if base not in CLASSES or base in seen:
            library = True
            continue
        for base_bases, base_names in CLASSES[base]:
            theirs, their_library = own_names(base_bases, base_names, seen | {base})
            own, library = own | theirs, library or their_library
    return own, library


def private_names(tree: ast.Module) -> set[str]:
    """The private names of other code the module uses: `x._name` (not namedtuple's `_asdict`
    and `_replace`, which are public), `self._name` read in a class deriving from a library's
    class where the class does not define `_name` itself, imports of `_modules` and of
    `_names`. Dunder names are nobody's private."""
    found = set()

    def private(name: str) -> bool:
        return name.startswith("_") and not name.startswith("__")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and not is_self(node.value):
            found |= set() if node.attr in ("_asdict", "_replace") else {node.attr}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            modules += [node.module] if isinstance(node, ast.ImportFrom) and node.module else []
            found |= {m for m in modules if any(private(part) for part in m.split("."))}
            if isinstance(node, ast.ImportFrom):
                found |= {a.name for a in node.names if private(a.name)}
        elif isinstance(node, ast.ClassDef):
            bases = [base_name(b) for b in node.bases]
            own, library = own_names(bases, defined(node), {node.name})
            for sub in ast.walk(node) if library else ():
                if isinstance(sub, ast.Attribute) and is_self(sub.value) and private(sub.attr):
                    found |= set() if sub.attr in own else {sub.attr}
    return found


def test_the_private_name_scan_sees_a_library_attribute_reached_through_self():
    code = (
        "import pytorch_lightning as L\n"
        "class M(L.LightningModule):\n"
        "    def __init__(self):\n"
        "        self._mine = 1\n"
        "    def f(self):\n"
        "        return self._trainer, self._mine, self.trainer._logger_connector\n"
    )
    assert private_names(ast.parse(code)) == {"_trainer", "_logger_connector"}


def test_private_library_calls_live_in_one_module_each():
    using = {f: private_names(tree) for f, tree in TREES.items()}
    using = {f: names for f, names in using.items() if names}
    assert set(using) == {PRIVATE_LIGHTNING, PRIVATE_HYDRA, *PRIVATE_LEFT}
    assert {f: using[f] for f in PRIVATE_LEFT} == PRIVATE_LEFT
    assert "pytorch_lightning.trainer" in imports(SOURCES[PRIVATE_LIGHTNING])  # its `call` module
    others = {f for f, p in SOURCES.items() if "pytorch_lightning.trainer" in imports(p)}
    assert others == {PRIVATE_LIGHTNING}


def test_the_launchers_import_what_they_may():
    crossing = {
        f: sorted(
            name
            for name in imports(p)
            if name.startswith("longterm.") and concern(name) not in LAUNCHERS_MAY_IMPORT
        )
        for f, p in LAUNCHERS.items()
    }
    assert {f: names for f, names in crossing.items() if names} == {}
    assert {m for m, p in MODULES.items() if knows("hydra_plugins", p)} == set()


def test_the_entry_points_import_only_the_check_at_top_level():
    """What the top level of src/train.py and src/contract.py imports: the standard library,
    Hydra, OmegaConf and the command-line check (longterm.config)."""
    libraries = {*sys.stdlib_module_names, "hydra", "omegaconf"}
    outside = {
        name: sorted(
            n
            for n in imports(SRC / name, top_level_only=True)
            if n.split(".")[0] not in libraries and not n.startswith("longterm.config.")
        )
        for name in ENTRY_POINTS
    }
    assert outside == {name: [] for name in ENTRY_POINTS}


def test_the_launchers_and_the_entry_points_load_neither_torch_nor_lightning():
    """Every module of hydra_plugins/ and the entry points' top level (run under another name
    than `__main__`) in a fresh interpreter."""
    names = sorted(module_name_of(f) for f in LAUNCHERS)
    code = "import runpy, sys\n" + "".join(f"import {m}\n" for m in names)
    code += "".join(f"runpy.run_path({str(SRC / n)!r}, run_name='entry')\n" for n in ENTRY_POINTS)
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] in "
    code += repr(("torch", *LIGHTNING)) + "))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("entry_point", ENTRY_POINTS)
def test_an_entry_point_checks_the_command_line_before_torch_loads(entry_point):
    """A bad override answered in one line, with no torch among the modules imported."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", str(SRC / entry_point), "pool=max"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert out.returncode == 1 and "error: pool='max' is invalid" in out.stderr
    loaded = {line.rsplit("|", 1)[1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert {m for m in loaded if m.split(".")[0] in ("torch", *LIGHTNING)} == set()


@pytest.mark.parametrize(
    "concern_", ["config", "store", "plugins", "tasks", "models", "contract", "analysis"]
)
def test_these_concerns_load_no_lightning(concern_):
    """Import every module of the concern (analysis: but `evaluate`) in a fresh interpreter."""
    names = sorted(
        m for m in MODULES if concern(m) == concern_ and not m.endswith("analysis.evaluate")
    )
    code = "import sys\n" + "".join(f"import {m}\n" for m in names)
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] in " + repr(LIGHTNING) + "))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_config_loads_no_torch_and_no_model():
    """Every module of config/ imported in a fresh interpreter: the command-line check answers a
    bad override before torch loads (a plugin's class is imported, and built on the meta device,
    only when a config is validated)."""
    names = sorted(m for m in MODULES if concern(m) == "config")
    code = "import sys\n" + "".join(f"import {m}\n" for m in names)
    code += "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'\n"
    code += "    or m.startswith('longterm.models')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_tasks_load_neither_torch_nor_pydantic():
    """tasks/ is numpy only: a generator imported alone brings no framework with it."""
    code = "import sys, longterm.tasks\n"
    code += "print(sorted(m for m in ('torch', 'pydantic', 'omegaconf') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
