"""Loading GE Python pass files as GE loads them: ASCEND_GE_PY_PASS_PATH's rules, the user's errors as data
(their file, line and frames only), `ge` importable only while FuseLens loads and runs the files."""

from __future__ import annotations

import importlib
import json
import sys

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.passes.config import PassConfig
from fuselens.passes.ge_python import load_env_passes, load_pass_files, pass_path_entries
from fuselens.passes.ge_python.scope import API_NAME
from tests.passes.ge_python_check import GEMM_EXPRESSION, write_pass

PASS = """
from ge.passes import PassStage, PatternFusionPass, pattern, register_fusion_pass


@register_fusion_pass(name="{name}", stage=PassStage.{stage})
class {name}(PatternFusionPass):
    @pattern
    def relu(self, inputs):
        from ge.es.nn import Relu
        return Relu(inputs[0])

    def replacement(self, inputs):
        return inputs[0]
"""


def test_a_template_loads_from_its_file():
    load = load_pass_files([GEMM_EXPRESSION])
    assert load.errors == [] and load.unsupported == []
    (found,) = load.passes
    assert (found.name, found.stage, found.kind) == ("MatMulAddToGemmPass", "BeforeInferShape", "pattern_fusion")
    assert found.source == str(GEMM_EXPRESSION) and found.line > 0
    assert load.files == [str(GEMM_EXPRESSION.resolve())]


def test_path_rules(tmp_path, monkeypatch):
    """':'-separated entries, blanks dropped; `_` names skipped; packages load; a file reached twice loads once."""
    folder = tmp_path / "passes"
    folder.mkdir()
    write_pass(folder, "b_pass.py", PASS.format(name="BPass", stage="AFTER_INFER_SHAPE"))
    write_pass(folder, "_helper.py", PASS.format(name="HelperPass", stage="BEFORE_INFER_SHAPE"))
    package = folder / "a_package"
    package.mkdir()
    write_pass(package, "__init__.py", "from . import inner\n")
    write_pass(package, "inner.py", PASS.format(name="PackagedPass", stage="AFTER_BUILTIN_FUSION_PASS"))
    (folder / "notes.txt").write_text("not a pass")
    single = folder / "b_pass.py"
    monkeypatch.setenv("ASCEND_GE_PY_PASS_PATH", f" {folder} :: {single}")
    assert pass_path_entries(f" {folder} :: {single}") == [str(folder), str(single)]
    load = load_env_passes()
    assert load.errors == []
    assert [p.name for p in load.passes] == ["PackagedPass", "BPass"]
    assert [p.stage for p in load.passes] == ["AfterBuiltinFusionPass", "AfterInferShape"]


def test_a_missing_path_and_a_non_python_file_are_errors(tmp_path):
    text = tmp_path / "pass.txt"
    text.write_text("x")
    load = load_pass_files([tmp_path / "nowhere.py", text])
    assert [e.message for e in load.errors] == ["no such file or directory", "a pass file must end with .py"]


def test_a_user_exception_is_their_file_line_and_frames(tmp_path):
    path = write_pass(tmp_path, "broken.py", """
        from ge.passes import PassStage

        def helper():
            return 1 / 0

        helper()
    """)
    load = load_pass_files([path])
    (error,) = load.errors
    assert (error.file, error.line, error.phase) == (str(path), 4, "load")
    assert error.message == "ZeroDivisionError: division by zero"
    assert "broken.py" in error.traceback and "importlib" not in error.traceback and "fuselens" not in error.traceback
    assert error.one_line() == f"{path}, line 4: ZeroDivisionError: division by zero"
    assert load.passes == []


def test_a_syntax_error_is_where_python_says(tmp_path):
    path = write_pass(tmp_path, "typo.py", "from ge.passes import PassStage\ndef f(:\n    pass\n")
    (error,) = load_pass_files([path]).errors
    assert (error.file, error.line) == (str(path), 2) and error.message.startswith("SyntaxError")


def test_a_duplicate_name_is_an_error_at_the_second(tmp_path):
    first = write_pass(tmp_path, "one.py", PASS.format(name="SamePass", stage="BEFORE_INFER_SHAPE"))
    second = write_pass(tmp_path, "two.py", PASS.format(name="SamePass", stage="BEFORE_INFER_SHAPE"))
    load = load_pass_files([first, second])
    assert [p.source for p in load.passes] == [str(first)]
    assert [e.message for e in load.errors] == ["ValueError: python pass name already exists: SamePass"]
    assert load.errors[0].file == str(second)


def test_an_unsupported_api_is_reported_by_name(tmp_path):
    path = write_pass(tmp_path, "rewriter.py", "from ge.passes import SubgraphRewriter\n")
    load = load_pass_files([path])
    assert load.unsupported == ["ge.passes.SubgraphRewriter"]
    assert "ge.passes.SubgraphRewriter is not provided by FuseLens's ge" in load.errors[0].message
    missing_op = write_pass(tmp_path, "op.py", """
        try:
            from ge.es.math import NoSuchOp
        except ImportError:  # a pass that falls back, as GE's examples do
            NoSuchOp = None
        import ge.session
    """)
    load = load_pass_files([missing_op])
    assert load.unsupported == ["ge.es.math.NoSuchOp", "ge.session"]


def test_a_reload_sees_the_edit(tmp_path):
    path = write_pass(tmp_path, "edited.py", PASS.format(name="FirstName", stage="BEFORE_INFER_SHAPE"))
    assert [p.name for p in load_pass_files([path]).passes] == ["FirstName"]
    write_pass(tmp_path, "edited.py", PASS.format(name="SecondName", stage="BEFORE_INFER_SHAPE"))
    assert [p.name for p in load_pass_files([path]).passes] == ["SecondName"]


def test_ge_is_importable_only_while_loading(tmp_path):
    """No real CANN here: outside FuseLens's loading `import ge` fails, as it did before."""
    assert importlib.util.find_spec("ge") is None
    load = load_pass_files([GEMM_EXPRESSION])
    assert load.real_ge is None and load.ge_note() == f"ran against {API_NAME}"
    assert "ge" not in sys.modules and "ge.passes" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("ge")


def test_a_real_ge_is_set_aside_and_named(tmp_path, monkeypatch, load_sample):
    real = tmp_path / "site" / "ge"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    import ge as real_ge

    load = load_pass_files([GEMM_EXPRESSION])
    assert load.errors == [] and load.real_ge == str(real)
    assert "a real ge is importable here" in load.ge_note() and str(real) in load.ge_note()
    assert sys.modules["ge"] is real_ge and real_ge.REAL
    monkeypatch.delitem(sys.modules, "ge")


def test_load_errors_stop_the_command_line_selection(tmp_path):
    import argparse

    path = write_pass(tmp_path, "broken.py", "raise RuntimeError('not yet')\n")
    with pytest.raises(FuseLensError, match=r"1 error\(s\) in GE Python pass files:\n  .*broken.py, line 1: "
                                            r"RuntimeError: not yet"):
        PassConfig.from_args(argparse.Namespace(py_pass=[str(path)]))


def test_a_configuration_keeps_its_pass_files_when_pickled_and_saved(tmp_path):
    import pickle

    config = PassConfig.from_ids([]).with_py_passes([GEMM_EXPRESSION])
    copy = pickle.loads(pickle.dumps(config))  # a helper process's copy loads the files again
    assert copy.py_load is None and copy.pass_ids()[-1] == "MatMulAddToGemmPass"
    assert copy.get_pass("MatMulAddToGemmPass").registered.source == str(GEMM_EXPRESSION)
    saved = PassConfig.from_json(json.loads(json.dumps(config.to_json())))
    assert saved.py_pass_files == (str(GEMM_EXPRESSION),) and saved.is_enabled("MatMulAddToGemmPass")


def test_a_window_shows_passes_another_process_loaded_without_running_them(tmp_path, load_sample):
    """The helper process loads (the user's code runs there), the window gets the load as JSON: its catalog
    lists the passes, nothing of the user's runs in it; a pickled copy loads and runs them for real."""
    import pickle

    from fuselens.passes.ge_python import PassLoad
    from fuselens.passes.pipeline import run_pipeline

    marker = tmp_path / "imported"
    path = write_pass(tmp_path, "counted.py", f"open({str(marker)!r}, 'a').write('x')\n"
                      + PASS.format(name="CountedPass", stage="BEFORE_INFER_SHAPE"))
    described = json.loads(json.dumps(load_pass_files([path]).to_json()))
    assert marker.read_text() == "x"
    window = PassConfig.from_ids([]).with_py_load([path], PassLoad.from_json(described))
    assert window.get_pass("CountedPass").title == "CountedPass (GE Python pass, BeforeInferShape)"
    assert marker.read_text() == "x"  # listed, not run
    helper = pickle.loads(pickle.dumps(window))
    pipeline = run_pipeline(load_sample("matmul_add_chain"), helper)
    assert pipeline.result("CountedPass").effect_times == 1 and marker.read_text() == "xx"
