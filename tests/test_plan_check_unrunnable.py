"""A plan the collector cannot run is not 'Compatible as specified': plan-check and the collector
agree on it. A workload module that is not there, or is no Python source, needs a revised plan
(plan-check exit 3; the collector refuses it, exit 2). What is wrong whatever the host (a module
path naming a folder, a shape beyond any host, a generation batch whose tokens no log line
holds, masks a generation plan cannot leave unpadded) is a plan error: one line naming the
file, the line and the key (plan-check exit 1, the collector exit 2, no run folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any, Callable

import pytest
import tomli_w
from click.testing import CliRunner

from collector.plan import load_plan
from reportgen.cli import main
from tests.conftest import REPO

WORKLOADS = REPO / "collector" / "workloads"


def _plan(folder: Path, edit: Callable[[dict[str, Any]], None], source: str = "tiny_encoder.toml") -> Path:
    """A shipped plan with one edit, its module named absolutely unless the edit names another."""
    data = tomllib.loads((WORKLOADS / source).read_text(encoding="utf-8"))
    data["workload"]["module"] = str(WORKLOADS / data["workload"]["module"])
    edit(data)
    path = folder / "plan.toml"
    path.write_text(tomli_w.dumps(data), encoding="utf-8")
    return path


def _line(path: Path, key: str) -> int:
    """The line of the plan that writes ``key = ...`` (the first one)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(n for n, text in enumerate(lines, start=1) if text.startswith(f"{key} ="))


def _plan_check(path: Path) -> tuple[int, str]:
    done = CliRunner().invoke(main, ["plan-check", str(path), "--target", "cpu"])
    return done.exit_code, done.output


def _collector(path: Path, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(REPO)
    return subprocess.run(
        [sys.executable, "-m", "collector", "--workload", str(path), "--target", "cpu", "--out", str(out)],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _module(name: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["workload"]["module"] = name

    return edit


def test_a_module_that_is_not_there_needs_a_revised_plan(tmp_path: Path) -> None:
    """Before: only a note, and 'Compatible as specified', exit 0, for a plan the collector
    refuses ('does not exist', exit 2). Now: a revise finding at the key's line, exit 3."""
    path = _plan(tmp_path, _module("gone.py"))
    code, out = _plan_check(path)
    assert code == 3 and "Needs a revised test plan" in out, out
    assert f"[REVISE] the workload module {tmp_path / 'gone.py'} does not exist here" in out
    assert f"where: workload.module (line {_line(path, 'module')})" in out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and "does not exist" in done.stderr, done.stderr


def test_a_module_that_is_no_python_source_needs_a_revised_plan(tmp_path: Path) -> None:
    """Before: a module path reaching a file that is no Python (``../../etc/passwd``, say) got
    no finding at all, 'Compatible', exit 0; the collector refused it (SyntaxError, exit 2).
    Now: a revise finding naming the line of the file that does not compile, exit 3."""
    (tmp_path / "plans").mkdir()
    (tmp_path / "notes.txt").write_text("root:x:0:0:root:/root:/bin/bash\n", encoding="utf-8")
    path = _plan(tmp_path / "plans", _module("../notes.txt"))
    code, out = _plan_check(path)
    assert code == 3, out
    here = f"Python {sys.version_info.major}.{sys.version_info.minor}"
    assert f"[REVISE] the workload module {tmp_path / 'notes.txt'} does not compile under {here}" in out
    assert "line 1: SyntaxError" in out and f"(compiled here by {here}; a collector on another Python" in out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and "SyntaxError" in done.stderr, done.stderr


def test_a_module_that_is_there_keeps_the_plan_compatible(tmp_path: Path) -> None:
    """Reviewed where its module is (a laptop with the repository), the shipped plan stays as it
    was: its functions bound as a module may bind them (a def, an import, an assignment, inside a
    top-level if or try)."""
    walrus = "if (build_model := (lambda: 1)):\n    pass\nfrom os import path as make_inputs, sep as run_model\ntask_metric = max\n"
    rest = walrus.split("\n", 2)[2]
    for source in (
        "from os.path import join as build_model\n"
        "if True:\n    def make_inputs(b, l, layout):\n        pass\n"
        "try:\n    import json as run_model\nexcept ImportError:\n    pass\n"
        "task_metric = lambda outputs, reference, inputs: 1.0\n",
        walrus,
        # A later review: each of these loads in the collector and read 'does not define'.
        "def build_model():\n    pass\nif False:\n    del build_model\n" + rest,
        "if True:\n    build_model = None\n    def build_model():\n        pass\n" + rest,
        "def _install():\n    global build_model\n    build_model = print\n_install()\n" + rest,
        "match print:\n    case build_model:\n        pass\n" + rest,
    ):
        (tmp_path / "w.py").write_text(source, encoding="utf-8")
        code, out = _plan_check(_plan(tmp_path, _module("w.py")))
        assert "workload module" not in out and code == 0, out


@pytest.mark.parametrize(
    "source,why",
    [
        ("from somewhere import *\n", "it imports * (line 1)"),
        ("from somewhere import  *\n", "it imports * (line 1)"),
        ("globals()['build_model'] = print\n", "it uses globals (line 1)"),
        ("import sys\nsys.modules[__name__].__dict__['build_model'] = print\n", "line 2"),
        ("def __getattr__(name):\n    return print\n", "a module __getattr__"),
        ("def _lazy(name):\n    return print\n__getattr__ = _lazy\n", "a module __getattr__"),
        ("def _install():\n    globals()['build_model'] = print\n_install()\n", "it uses globals (line 2)"),
        ("import builtins\nbuiltins.exec('build_model = print')\n", "it uses builtins.exec (line 2)"),
        ("class _S:\n    globals()['build_model'] = print\n", "it uses globals (line 2)"),
        ('exec("def build_model(): pass")\n', "it uses exec (line 1)"),
        ("import sys as s\ns.modules[__name__].build_model = print\n", "it uses s.modules (line 2)"),
        ("from builtins import exec as run\nrun('build_model = print')\n", "it imports from builtins (line 1)"),
        ("import importlib\nimportlib.import_module(__name__).x = 1\n", "it uses importlib.import_module (line 2)"),
        ("__builtins__.exec('build_model = print')\n", "it uses __builtins__.exec (line 1)"),
    ],
)
def test_a_module_whose_source_cannot_tell_keeps_the_plan_compatible_and_says_it_was_not_checked(
    tmp_path: Path, source: str, why: str
) -> None:
    """A module that may bind names in ways no statement shows is not judged (plan-check errs
    towards 'defined': the collector may load it). Before: no word of it, so 'Compatible as
    specified', exit 0, read as if its functions had been found, where the collector refused
    ``exec("def build_model(): pass")`` for lacking three (exit 2). Now a note says they were not
    checked, why (with the line), and how to check them."""
    (tmp_path / "w.py").write_text(source, encoding="utf-8")
    code, out = _plan_check(_plan(tmp_path, _module("w.py")))
    assert code == 0 and "Compatible as specified" in out, out
    assert "[NOTE] the workload module" in out and "functions were not checked here" in out, out
    assert why in out and "--max-cells 1" in out, out


@pytest.mark.parametrize(
    "source,plan,missing",
    [
        ("", "tiny_encoder.toml", "build_model, make_inputs, run_model, task_metric"),
        (
            "# this module executes nothing; see globals\n",
            "tiny_encoder.toml",
            "build_model, make_inputs, run_model, task_metric",
        ),
        (
            "build_model = make_inputs = run_model = task_metric = None\n",
            "tiny_encoder.toml",
            "build_model, make_inputs, run_model, task_metric",
        ),
        (
            "def build_model():\n    pass\ndef make_inputs():\n    pass\nrun_model = task_metric = 3\n",
            "tiny_encoder.toml",
            "run_model, task_metric",
        ),
        (
            "def build_model():\n    pass\nmake_inputs: object\n",
            "tiny_encoder.toml",
            "make_inputs, run_model, task_metric",
        ),
        (
            "def build_model():\n    def run_model():\n        pass\n",
            "tiny_classifier.toml",
            "make_inputs, run_model, loss_fn, make_optimizer",
        ),
        ("def build_model():\n    pass\ndef make_inputs():\n    pass\n", "decoder_lm.toml", "new_cache, step, pad_id"),
        # A later review: an attribute named like a builtin (model.eval(), self.modules(),
        # self.__dict__) had turned the check off, so nearly every real workload, which puts its
        # model in eval mode, read 'Compatible' while lacking a function.
        (
            "import torch\nclass M(torch.nn.Module):\n    def reset(self):\n        for m in self.modules():\n"
            "            m.__dict__.clear()\n            object.__setattr__(m, 'x', 1)\n"
            "def build_model():\n    return M().eval()\ndef run_model(model, inputs):\n    return model(**inputs)\n"
            "def task_metric(outputs, reference, inputs):\n    return 1.0\n",
            "tiny_encoder.toml",
            "make_inputs",
        ),
    ],
    ids=[
        "empty",
        "words-in-a-comment",
        "bound-to-none",
        "numbers",
        "annotated-only",
        "nested",
        "generation",
        "eval-mode-and-module-methods",
    ],
)
def test_a_module_that_lacks_a_function_needs_a_revised_plan(
    tmp_path: Path, source: str, plan: str, missing: str
) -> None:
    """Before: a module that defines none of the functions the plan's kind needs (an empty file)
    read 'Compatible as specified', exit 0; the collector refused it ('lacks ...', exit 2). Its
    source is read, never run: the names no top-level statement binds are named, exit 3."""
    (tmp_path / "w.py").write_text(source, encoding="utf-8")
    path = _plan(tmp_path, _module("w.py"), source=plan)
    code, out = _plan_check(path)
    assert code == 3, out
    assert f"[REVISE] the workload module {tmp_path / 'w.py'} does not define {missing}" in out
    if not source:  # the collector agrees, naming the same functions
        done = _collector(path, tmp_path / "runs")
        assert done.returncode == 2 and f"lacks {missing}" in done.stderr, done.stderr


@pytest.mark.parametrize("module", ["", ".", "..", "models/"], ids=["empty", "dot", "dot-dot", "trailing-slash"])
def test_a_module_path_naming_a_folder_is_a_plan_error(tmp_path: Path, module: str) -> None:
    """Before: module = "" or "." passed the schema: a note (the plan's folder 'is a folder')
    and 'Compatible as specified', exit 0. Now both programs refuse it in one line."""
    path = _plan(tmp_path, _module(module))
    where = (
        f"{path}:{_line(path, 'module')}: workload.module: {module!r} names a folder, not the workload's Python file"
    )
    code, out = _plan_check(path)
    assert (
        code == 1
        and out.strip()
        == f'reportgen plan-check: unreadable plan: {where}; expected a file such as "my_encoder.py" (a path relative to the plan)'
    ), out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and done.stderr.strip().startswith(f"collector: plan error: {where}"), done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_shape_beyond_any_host_is_a_plan_error(tmp_path: Path) -> None:
    """Before: shapes = [[99999999999999999, 16]] read 'Compatible as specified', exit 0, and
    the collector recorded every cell as an error ('Overflow when unpacking long long'). Now
    both refuse it in one line: batch x length is at most 2^31 - 1."""
    path = _plan(tmp_path, lambda d: d["matrix"].update(shapes=[[99999999999999999, 16]], cache_checks=[]))
    code, out = _plan_check(path)
    assert code == 1 and "Traceback" not in out, out
    line = _line(path, "shapes")
    message = f"{path}:{line}: matrix.shapes: [99999999999999999, 16] is batch x length = 1,599,999,999,999,999,984 positions in one input, more than 2,147,483,647 (2^31 - 1)"
    assert out.startswith(f"reportgen plan-check: unreadable plan: {message}") and out.count("\n") == 1, out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and done.stderr.startswith(f"collector: plan error: {message}"), done.stderr
    assert not (tmp_path / "runs").exists()
    # The largest shape allowed is still a plan.
    load_plan(_plan(tmp_path, lambda d: d["matrix"].update(shapes=[[1, 2**31 - 1]], cache_checks=[])))


def test_a_generation_batch_whose_tokens_no_log_line_holds_is_a_plan_error(tmp_path: Path) -> None:
    """Before: a generation plan of shapes = [[100000000, 6]] read 'Compatible as specified':
    its cells' tokens (a batch x 5 steps, twice) could never be written on one log line. Now
    both programs refuse it in one line."""
    path = _plan(tmp_path, lambda d: d["matrix"].update(shapes=[[100_000_000, 6]], cache_checks=[]), "decoder_lm.toml")
    message = (
        f"{path}:{_line(path, 'shapes')}: matrix.shapes: a batch of 100,000,000 x (decode_steps 4 + 1) = 500,000,000 "
        "greedy tokens a cell, logged with the reference's on one generation event line; at most 131,072 fit the "
        "event contract's 8 MiB line limit"
    )
    code, out = _plan_check(path)
    assert code == 1 and out.strip() == f"reportgen plan-check: unreadable plan: {message}", out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and done.stderr.strip() == f"collector: plan error: {message}", done.stderr
    load_plan(_plan(tmp_path, lambda d: d["matrix"].update(shapes=[[26_214, 6]], cache_checks=[]), "decoder_lm.toml"))


def test_unmasked_padding_in_a_generation_plan_is_a_plan_error(tmp_path: Path) -> None:
    """Before: mask_padded = false in a generation plan was never read: the collector masked
    the padded positions anyway, the report said 'masks padded: False' and plan-check 'the
    mask padded alike'. Now both programs refuse it in one line saying why."""
    path = _plan(tmp_path, lambda d: d["padding"].update(mask_padded=False), "decoder_lm.toml")
    message = (
        f"{path}:{_line(path, 'mask_padded')}: padding.mask_padded: a generation plan's requests are padded by the "
        "collector, which always masks the padded positions (attention mask 0 there): set it to true or leave it out"
    )
    code, out = _plan_check(path)
    assert code == 1 and out.strip() == f"reportgen plan-check: unreadable plan: {message}", out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and done.stderr.strip() == f"collector: plan error: {message}", done.stderr


def test_unmasked_padding_elsewhere_is_the_plans_word_on_its_preprocessing(tmp_path: Path) -> None:
    """Outside a generation plan make_inputs builds the masks: the value is recorded as declared."""
    plan = load_plan(_plan(tmp_path, lambda d: d["padding"].update(mask_padded=False)))
    assert plan.padding is not None and plan.padding["mask_padded"] is False


def _shipped_module_with(tmp_path: Path, edit: Callable[[str], str]) -> Path:
    """A copy of the tiny encoder's module, edited, beside its plan (named absolutely)."""
    source = (WORKLOADS / "tiny_encoder.py").read_text(encoding="utf-8")
    (tmp_path / "w.py").write_text(edit(source), encoding="utf-8")
    return _plan(tmp_path, _module(str(tmp_path / "w.py")))


def test_a_task_criterion_naming_another_metric_than_the_module_s_needs_a_revised_plan(tmp_path: Path) -> None:
    """Before: a plan whose task criterion names 'cosine' beside a module whose TASK_METRIC is
    'min_cosine_to_reference' read 'Compatible as specified', exit 0; the collector refused it
    before any cell ran (exit 2). Now the review says so, at the criterion's line, exit 3."""
    path = _shipped_module_with(tmp_path, lambda text: text)
    text = path.read_text(encoding="utf-8").replace('metric = "min_cosine_to_reference"', 'metric = "cosine"', 1)
    path.write_text(text, encoding="utf-8")
    assert 'metric = "cosine"' in text
    code, out = _plan_check(path)
    assert code == 3, out
    assert (
        "[REVISE] the plan's task criterion for float32 names 'cosine', but the workload module's TASK_METRIC "
        "is 'min_cosine_to_reference'" in out
    ), out
    line = next(n for n, row in enumerate(text.splitlines(), start=1) if 'metric = "cosine"' in row)
    assert f"(line {line})" in out, out
    done = _collector(path, tmp_path / "runs")
    assert done.returncode == 2 and "TASK_METRIC is 'min_cosine_to_reference'" in done.stderr, done.stderr


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text,
        lambda text: text.replace('TASK_METRIC = "min_cosine_to_reference"', "from os import sep as TASK_METRIC"),
        lambda text: text + "\nTASK_METRIC = 'cosine' if False else TASK_METRIC\n",
        lambda text: text.replace('TASK_METRIC = "min_cosine_to_reference"', "TASK_METRIC: str"),
    ],
    ids=["the-same", "imported", "computed", "annotated-only"],
)
def test_a_task_metric_the_source_does_not_state_as_one_string_is_not_judged(
    tmp_path: Path, edit: Callable[[str], str]
) -> None:
    """Only a TASK_METRIC every binding of which assigns one string is read: the shipped module
    against its own plan, or one bound otherwise, keeps the plan as it was."""
    code, out = _plan_check(_shipped_module_with(tmp_path, edit))
    assert code == 0 and "TASK_METRIC" not in out, out


def _make_inputs_renamed(line: str) -> Callable[[str], str]:
    """The tiny encoder's module with make_inputs defined as _mk, and ``line`` appended."""
    return lambda text: text.replace("def make_inputs(", "def _mk(", 1) + "\n" + line


@pytest.mark.parametrize(
    "value,said",
    [("None", "NoneType None"), ("3", "int 3"), ('b"min_cosine_to_reference"', "bytes b'min_cosine_to_reference'")],
    ids=["none", "a-number", "bytes"],
)
def test_a_task_metric_that_is_no_string_needs_a_revised_plan(tmp_path: Path, value: str, said: str) -> None:
    """Before: ``TASK_METRIC = None`` (or 3, or bytes) read 'Compatible as specified', exit 0,
    with no note; the collector refuses a TASK_METRIC that is no string before any cell runs
    (exit 2). Now a revise finding says so, exit 3."""
    path = _shipped_module_with(
        tmp_path, lambda text: text.replace('TASK_METRIC = "min_cosine_to_reference"', f"TASK_METRIC = {value}", 1)
    )
    code, out = _plan_check(path)
    assert code == 3, out
    assert f"[REVISE] the workload module {tmp_path / 'w.py'}'s TASK_METRIC is {said}, not a string" in out, out
    assert "TASK_METRIC must be the metric's name, a string" in out, out


@pytest.mark.parametrize(
    "value,said",
    [('"Synthetic"', "'Synthetic'"), ('"trained"', "'trained'"), ("3", "3")],
    ids=["capitalised", "another-word", "a-number"],
)
def test_a_weights_origin_the_collector_refuses_needs_a_revised_plan(tmp_path: Path, value: str, said: str) -> None:
    """Before: WEIGHTS_ORIGIN was not read at all, so ``WEIGHTS_ORIGIN = "Synthetic"`` read
    'Compatible as specified', exit 0; the collector refuses a WEIGHTS_ORIGIN that is none of
    pretrained, synthetic, none on import (exit 2). Now a revise finding says so, exit 3."""
    path = _shipped_module_with(
        tmp_path, lambda text: text.replace('WEIGHTS_ORIGIN = "synthetic"', f"WEIGHTS_ORIGIN = {value}", 1)
    )
    code, out = _plan_check(path)
    assert code == 3, out
    assert (
        f"[REVISE] the workload module {tmp_path / 'w.py'}'s WEIGHTS_ORIGIN {said} is none of "
        "pretrained, synthetic, none" in out
    ), out


@pytest.mark.parametrize(
    "line",
    [
        'if __name__ == "__main__":\n    def make_inputs(batch, length, layout):\n        return _mk(batch, length, layout)\n',
        "if '__main__' == __name__:\n    make_inputs = _mk\n",
        'if __name__ == "__main__":\n    exec("make_inputs = _mk")\n',
    ],
    ids=["a-def", "an-assignment", "an-exec"],
)
def test_a_function_bound_only_under_the_main_guard_is_not_defined(tmp_path: Path, line: str) -> None:
    """Before: ``def make_inputs`` only under ``if __name__ == "__main__":`` counted as a
    binding, 'Compatible as specified', exit 0 (an exec there, a note); the collector imports
    the module by another name, so that body never runs, and refuses it ('lacks make_inputs',
    exit 2). Now that body is not read: 'does not define make_inputs', exit 3."""
    code, out = _plan_check(_shipped_module_with(tmp_path, _make_inputs_renamed(line)))
    assert code == 3, out
    assert f"[REVISE] the workload module {tmp_path / 'w.py'} does not define make_inputs" in out, out


def test_the_main_guard_s_else_and_a_module_that_binds_name_are_still_read(tmp_path: Path) -> None:
    """Before, as now: 'Compatible as specified' for a make_inputs bound in the else of the main
    guard, which runs in the collector, or under the guard of a module that binds __name__,
    whose body may run. Now that the guard's body is not read, both still read so."""
    for line in (
        'if __name__ == "__main__":\n    pass\nelse:\n    make_inputs = _mk\n',
        '__name__ = "__main__"\nif __name__ == "__main__":\n    make_inputs = _mk\n',
    ):
        code, out = _plan_check(_shipped_module_with(tmp_path, _make_inputs_renamed(line)))
        assert code == 0 and "workload module" not in out, out


TASK_METRIC_LINE = 'TASK_METRIC = "min_cosine_to_reference"'


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace(
            TASK_METRIC_LINE, TASK_METRIC_LINE + '\nif hasattr(torch, "neuron"):\n    TASK_METRIC = "neuron_cosine"', 1
        ),
        lambda text: text.replace(
            TASK_METRIC_LINE, 'if hasattr(torch, "neuron"):\n    TASK_METRIC = "neuron_cosine"', 1
        ),
        lambda text: text.replace(TASK_METRIC_LINE, 'if __name__ == "__main__":\n    TASK_METRIC = "cosine"', 1),
        lambda text: text + '\nif __name__ == "__main__":\n    TASK_METRIC = "cosine"\n',
        lambda text: text.replace(TASK_METRIC_LINE, 'TASK_METRIC = "cosine"\ndel TASK_METRIC', 1),
        lambda text: text.replace(TASK_METRIC_LINE, 'if hasattr(torch, "neuron"):\n    TASK_METRIC = None', 1),
        lambda text: text + "\ndef _late():\n    global TASK_METRIC\n    TASK_METRIC = 'cosine'\n",
        lambda text: text + "\nfor TASK_METRIC in ['min_cosine_to_reference']:\n    pass\n",
        lambda text: text + "\nTASK_METRIC += ''\n",
        # The collector refuses this one (if True), as it runs the first: the source does not
        # tell them apart, and a review never says 'revise' for a module the collector runs.
        lambda text: text.replace(TASK_METRIC_LINE, TASK_METRIC_LINE + '\nif True:\n    TASK_METRIC = "cosine"', 1),
        lambda text: text.replace(
            'WEIGHTS_ORIGIN = "synthetic"', 'WEIGHTS_ORIGIN = "synthetic"\nif False:\n    WEIGHTS_ORIGIN = "x"', 1
        ),
        lambda text: text.replace('WEIGHTS_ORIGIN = "synthetic"', "WEIGHTS_ORIGIN = None", 1),
    ],
    ids=[
        "another-also-in-a-branch-not-taken",
        "only-in-a-branch-not-taken",
        "only-under-the-main-guard",
        "another-also-under-the-main-guard",
        "deleted",
        "none-in-a-branch",
        "a-function-s-global",
        "a-loop",
        "augmented",
        "another-in-an-if",
        "weights-origin-in-a-branch",
        "weights-origin-none",
    ],
)
def test_a_stated_value_bound_otherwise_than_once_plainly_is_not_judged(
    tmp_path: Path, edit: Callable[[str], str]
) -> None:
    """Before: a TASK_METRIC set to another string only in a branch not taken on the collector's
    host (``if hasattr(torch, "neuron"):``), only under the main guard, or set then deleted read
    'revise' (exit 3) where the collector loads and runs the module (exit 0). Now TASK_METRIC and
    WEIGHTS_ORIGIN are judged only where the module binds each once, by a plain assignment of a
    literal directly in its body (the main guard's body not counted); any other binding of it is
    no finding, as is a WEIGHTS_ORIGIN of None, which the collector logs as not stated."""
    code, out = _plan_check(_shipped_module_with(tmp_path, edit))
    assert code == 0 and "Compatible as specified" in out, out
    assert "TASK_METRIC" not in out and "WEIGHTS_ORIGIN" not in out and "workload module" not in out, out


@pytest.mark.parametrize(
    "line,why",
    [
        ("import importlib.util\nimportlib.import_module(__name__).make_inputs = _mk\n", "importlib.import_module"),
        ("import sys\n_S = sys\n_S.modules[__name__].make_inputs = _mk\n", "_S.modules"),
        ("import sys as s\n_A = _B = s\n_B.modules[__name__].make_inputs = _mk\n", "_B.modules"),
        ("import sys\ngetattr(sys, 'modules')[__name__].make_inputs = _mk\n", "getattr(sys, ...)"),
        ("_mk.__globals__['make_inputs'] = _mk\n", ".__globals__"),
        ("import inspect\ninspect.currentframe().f_globals['make_inputs'] = _mk\n", ".f_globals"),
        (
            "from importlib import import_module as load\nload(__name__).make_inputs = _mk\n",
            "load (importlib.import_module",
        ),
        ("import importlib\nimportlib.import_module('.', __package__).make_inputs = _mk\n", "importlib.import_module"),
        ("def _install(module):\n    setattr(module, 'make_inputs', _mk)\n", "setattr"),
        ("vars()['make_inputs'] = _mk\n", "vars"),
        (
            "import importlib\nimportlib.import_module('collector_workload_w').make_inputs = _mk\n",
            "importlib.import_module",
        ),
    ],
    ids=[
        "import-importlib-util",
        "an-alias-of-sys",
        "an-alias-of-an-alias",
        "getattr-of-sys",
        "a-function-s-globals",
        "a-frame-s-globals",
        "import-module-imported",
        "import-module-relative",
        "setattr-of-a-parameter",
        "vars-of-the-module",
        "import-module-of-the-collector-s-name",
    ],
)
def test_a_function_bound_through_an_alias_says_it_was_not_checked(tmp_path: Path, line: str, why: str) -> None:
    """Before: make_inputs bound through ``import importlib.util`` and
    ``importlib.import_module(__name__)``, an alias of sys (``_S = sys``), ``getattr(sys,
    'modules')`` or a function's ``__globals__`` read 'does not define make_inputs', exit 3,
    where the collector loads and runs the module (exit 0). Now a note says the functions were
    not checked, and why, at the line; the plan stays 'Compatible as specified', exit 0."""
    code, out = _plan_check(_shipped_module_with(tmp_path, _make_inputs_renamed(line)))
    assert code == 0 and "Compatible as specified" in out, out
    assert "[NOTE] the workload module" in out and "functions were not checked here" in out, out
    assert f"it uses {why}" in out, out


@pytest.mark.parametrize(
    "edit",
    [
        lambda text: text.replace(
            "        self.norm2 = nn.LayerNorm(DIM)\n",
            "        self.norm2 = nn.LayerNorm(DIM)\n        setattr(self, 'extra', nn.Identity())\n",
            1,
        ),
        _make_inputs_renamed("class _Hooks:\n    @classmethod\n    def add(cls):\n        setattr(cls, 'n', 1)\n"),
        _make_inputs_renamed("def _tie(block):\n    setattr(block.ff, 'extra', nn.Identity())\n"),
        _make_inputs_renamed("_FIELDS = sorted(vars(TinyEncoder))\n"),
        _make_inputs_renamed("import importlib\n_MATH = importlib.import_module('math')\n"),
        _make_inputs_renamed("import importlib.util\n_MATH = importlib.import_module('math')\n"),
        _make_inputs_renamed("from importlib import import_module\n_MATH = import_module('math')\n"),
    ],
    ids=[
        "setattr-of-self",
        "setattr-of-cls",
        "setattr-of-an-attribute",
        "vars-of-a-class",
        "import-module-of-math",
        "import-module-through-importlib-util",
        "import-module-imported",
    ],
)
def test_ordinary_calls_keep_the_function_check(tmp_path: Path, edit: Callable[[str], str]) -> None:
    """Before: ``setattr(self, 'extra', ...)`` in a method, ``vars(TinyEncoder)`` or
    ``importlib.import_module('math')`` turned the function check off (a note, exit 0) where
    the collector refuses the module for lacking make_inputs (exit 2). A setattr or vars of what
    is plainly not the module (self, cls, an attribute, a class the module defines), and an
    import_module naming another module by a string, bind no module name: now 'does not define
    make_inputs', exit 3."""
    path = _shipped_module_with(tmp_path, lambda text: edit(text).replace("def make_inputs(", "def _mk(", 1))
    code, out = _plan_check(path)
    assert code == 3, out
    assert f"[REVISE] the workload module {tmp_path / 'w.py'} does not define make_inputs" in out, out


@pytest.mark.parametrize("plan", ["decoder_lm.toml", "tiny_classifier.toml", "scenario_a.toml"])
def test_a_module_that_binds_every_function_plainly_gets_no_note_beside_what_else_it_does(plan: str) -> None:
    """A later review: the shipped decoder (a module __getattr__ for MODEL_REVISION) and the
    classifier (sys.modules, to register the encoder it imports) read "functions were not
    checked here", though each binds every function it needs with a plain def. A module
    __getattr__ answers only names a module lacks, and what a statement binds is there whatever
    else binds names: the note is for a name no statement binds."""
    code, out = _plan_check(WORKLOADS / plan)
    assert "not checked here" not in out, out
    assert "does not define" not in out, out
