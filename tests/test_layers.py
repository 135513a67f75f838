"""depthlab in three layers: a small core, the fast paths tested against it, the book apart.

* the core (``depthlab/*.py``) stays small and imports nothing from ``depthlab.fast`` or
  ``depthlab.book``; neither does anything else import upward;
* argument checks are written once, in ``depthlab/_checks.py``;
* the fast paths agree with the core loop model by model: the tests named in
  ``EQUIVALENCE_TESTS`` (tests/test_sweep.py, tests/test_resnet.py), and the hand-written
  optimizer of ``depthlab.fast`` is checked here against ``torch.optim`` step by step;
* every public function and class names the chapter or lab that introduces it.
"""

import ast
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import depthlab as dl
from depthlab.fast import sweep

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "depthlab"
# Chapter 2's blocks, Chapter 3's path expansion and Chapter 6's memory meter: chapter
# instruments kept at the top level because the notebooks import them as modules (`from depthlab
# import paths`); they obey the import rule but are not counted in the core's size.
CHAPTER_MODULES = {"shortcuts.py", "paths.py", "memory.py"}
CORE = sorted(p for p in PACKAGE.glob("*.py") if p.name != "__init__.py")
# The core, counted without docstrings, comments and blank lines (the code a learner follows),
# and as physical lines with its docstrings (so that it cannot grow unnoticed either).
CORE_CODE_LINES = 1200
CORE_LINES = 2300


def code_lines(path: Path) -> int:
    """Lines of code: not blank, not a comment, not part of a docstring."""
    source = path.read_text(encoding="utf-8")
    docs = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                docs.update(range(first.lineno, first.end_lineno + 1))
    return sum(1 for i, line in enumerate(source.splitlines(), 1)
               if line.strip() and not line.strip().startswith("#") and i not in docs)


def depthlab_imports(path: Path) -> set[str]:
    """The depthlab modules that ``path`` imports, as dotted names (``depthlab.fast.sweep``)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])  # depthlab[.fast]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "depthlab"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "depthlab":
                continue
            found.add(module)
            found |= {f"{module}.{a.name}" for a in node.names}  # `from . import fast`
    return found


def test_the_core_stays_small():
    counted = [p for p in CORE if p.name not in CHAPTER_MODULES]
    code = sum(code_lines(p) for p in counted)
    lines = sum(len(p.read_text(encoding="utf-8").splitlines()) for p in counted)
    report = ", ".join(f"{p.name} {code_lines(p)}" for p in counted)
    assert code <= CORE_CODE_LINES, f"the core has {code} lines of code ({report})"
    assert lines <= CORE_LINES, f"the core has {lines} lines with its docstrings"


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_the_core_imports_nothing_from_the_fast_paths_or_the_book(path):
    upward = {m for m in depthlab_imports(path)
              if m.startswith(("depthlab.fast", "depthlab.book"))}
    assert not upward, f"{path.name} imports {sorted(upward)}"


def test_the_fast_paths_and_the_book_do_not_import_each_other():
    for layer, other in (("fast", "book"), ("book", "fast")):
        for path in (PACKAGE / layer).glob("*.py"):
            wrong = {m for m in depthlab_imports(path) if m.startswith(f"depthlab.{other}")}
            assert not wrong, f"{layer}/{path.name} imports {sorted(wrong)}"


def test_argument_checks_are_written_once():
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                private = [a.name for a in node.names if a.name.startswith("_check_")]
                assert not private, f"{path.name} imports {private}: use depthlab._checks"
        if path.name != "_checks.py":
            assert "must be True or False" not in source, (
                f"{path.name} checks a flag itself: use depthlab._checks.boolean")


def test_the_per_step_record_is_written_once():
    # float64 gradient norms, update ratios and the loss's un-scaling live in probes.py only;
    # depthlab.train and depthlab.fast call them
    for path in PACKAGE.rglob("*.py"):
        source = path.read_text(encoding="utf-8")
        if path.name != "probes.py":
            assert ".double().norm" not in source and "clamp_min(1e-30)" not in source, path
            assert "/ self.loss_scale" not in source, path
    assert "gradient_norms" in inspect.getsource(sweep._ManyModels.step)
    assert "update_ratios" in inspect.getsource(sweep._ManyModels.step)


# ---------------------------------------------------------------- fast path against the core

# Where the fast paths are tested against the core loop, model by model.
EQUIVALENCE_TESTS = {
    "test_sweep.py": [
        "test_training_together_equals_training_one_by_one",            # MLPs, Adam and SGD
        "test_models_that_differ_in_init_and_fixed_alpha_share_a_batch",
        "test_transformers_train_together_as_one_by_one_with_their_own_warmup",
        "test_weight_decay_together_equals_one_by_one",
        "test_float64_models_with_a_tiny_adam_eps_train_together_as_one_by_one",
        "test_any_model_with_blocks_and_block_weights_trains_together_as_one_by_one",
        "test_a_diverging_model_stops_without_disturbing_the_others",
        "test_a_loss_scale_trains_together_as_one_by_one",
    ],
    # ResNetStack: several seeds' ResNets in grouped convolutions against each one alone
    "test_resnet.py": ["test_a_stack_holds_exactly_the_initial_weights_of_its_networks",
                       "test_a_stack_of_seeds_gives_each_member_the_network_of_its_seed",
                       "test_a_stack_trained_with_dl_train_matches_its_members_trained_alone",
                       "test_members_of_a_stack_drop_blocks_independently_and_as_they_would_alone"],
}


def test_every_fast_path_has_its_equivalence_tests():
    for name, tests in EQUIVALENCE_TESTS.items():
        defined = set(re.findall(r"^def (test_\w+)", (ROOT / "tests" / name).read_text(),
                                 re.MULTILINE))
        assert set(tests) <= defined, f"{name} lost {sorted(set(tests) - defined)}"


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("weight_decay", [0.0, 1e-2])
def test_the_hand_written_optimizer_is_torch_optim_with_one_rate_per_model(optimizer,
                                                                           weight_decay):
    """``_ManyModels._update`` against ``torch.optim`` on each model's own copy, given the same
    gradients, with a learning rate per model; model 2 diverges at step 3 and stays frozen."""
    torch.manual_seed(0)
    models = [dl.DeepMLP(2, 4, seed=s).double() for s in range(3)]
    lrs = [1e-3, 1e-2, 3e-2]
    many = sweep._ManyModels(models, optimizer, lrs=lrs, weight_decay=weight_decay,
                             adam_eps=1e-8, betas=(0.9, 0.98))
    copies = [many.theta[k].detach().clone().requires_grad_(True) for k in range(3)]
    if optimizer == "adam":
        opts = [torch.optim.Adam([p], lr=lr, betas=(0.9, 0.98), eps=1e-8,
                                 weight_decay=weight_decay) for p, lr in zip(copies, lrs)]
    else:
        opts = [torch.optim.SGD([p], lr=lr, momentum=0.9, weight_decay=weight_decay)
                for p, lr in zip(copies, lrs)]
    g = torch.Generator().manual_seed(1)
    for step in range(6):
        grad = torch.randn(many.theta.shape, generator=g, dtype=torch.float64)
        if step == 3:
            many.active[2] = False  # diverged: _ManyModels.step zeroes its gradient
        grad = torch.where(many.active[:, None], grad, 0.0)
        frozen = many.theta[2].detach().clone()
        with torch.no_grad():
            many._update(grad, (many.lr0 * many.active)[:, None])
        for k, (p, opt) in enumerate(zip(copies, opts)):
            if not many.active[k]:
                continue
            p.grad = grad[k].clone()
            opt.step()
            np.testing.assert_allclose(many.theta[k].detach().numpy(), p.detach().numpy(),
                                       rtol=1e-12, atol=1e-15)
        if step >= 3:
            assert torch.equal(many.theta[2].detach(), frozen)


# ---------------------------------------------------------------- back-pointers

INTRODUCED = re.compile(r"Introduced (in|with :func:`\w+` in) (Chapter \d|Lab \d|the "
                        r"(drills|solutions) of (Chapter|Lab) \d)[^(]*\(((chapters|labs|solutions)"
                        r"/[\w]+)\)")


def public_objects():
    from depthlab import memory, paths, shortcuts

    for name in dl.__all__:
        obj = getattr(dl, name)
        if inspect.isfunction(obj) or inspect.isclass(obj):
            yield f"dl.{name}", obj
    for module in (paths, memory, shortcuts):
        for name, obj in vars(module).items():
            if (not name.startswith("_") and (inspect.isfunction(obj) or inspect.isclass(obj))
                    and obj.__module__ == module.__name__):
                yield f"{module.__name__}.{name}", obj


@pytest.mark.parametrize("name, obj", list(public_objects()), ids=lambda v: v if
                         isinstance(v, str) else "")
def test_every_public_name_says_which_chapter_or_lab_introduces_it(name, obj):
    match = INTRODUCED.search(obj.__doc__ or "")
    assert match, f"{name}'s docstring does not say which chapter or lab introduces it"
    assert (ROOT / f"{match.group(5)}.ipynb").exists(), f"{name} points to {match.group(5)}"
