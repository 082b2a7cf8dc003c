"""What the fuzzer found, as regression tests (the inputs cut down to what triggers each bug).

Fixed here: the msprof timeline importer, AUTOFUSE_FLAGS, switch files, rule files and the model
loader. Found in files owned elsewhere and fixed there (they began as strict xfail tests naming the
file to fix; a bug the fuzzer finds before its fix lands goes in harness.KNOWN_BUGS the same way).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from fuselens.core.errors import FuseLensError
from fuselens.core.formats.loaders import load_model
from fuselens.core.graph import proto
from fuselens.core.graph.nodes import make_node
from tests.fuzz import harness


def one_line_error(call, *args) -> str:
    with pytest.raises(FuseLensError) as err:
        call(*args)
    message = str(err.value)
    assert "\n" not in message and "\r" not in message, message
    return message


# ---- fixed ------------------------------------------------------------------------------------
@pytest.mark.parametrize("pid", [[2000], {"id": 2000}, True])
def test_an_msprof_timeline_whose_pid_is_a_list_or_an_object_is_read(tmp_path, pid) -> None:
    """Was `TypeError: unhashable type: 'list'` from read_msprof_json (fuzz case msprof_json 84)."""
    from fuselens.core.measure.msprof import import_graph_run

    events = [{"name": "process_name", "pid": 2000, "ph": "M", "args": {"name": "Ascend Hardware"}},
              {"name": "process_name", "pid": pid, "ph": "M", "args": {"name": "Ascend Hardware"}},
              {"name": "abs_0", "pid": 2000, "tid": 2, "ts": "100.0", "dur": 5.0, "ph": "X", "args": {}},
              {"name": "relu_0", "pid": pid, "tid": 2, "ts": "110.0", "dur": 5.0, "ph": "X", "args": {}}]
    path = tmp_path / "msprof_20260101120000.json"
    path.write_text(json.dumps(events))
    assert [k.kernel for k in import_graph_run(path).kernels] == ["abs_0"]


def test_an_unknown_autofuse_flag_with_a_line_break_is_one_line() -> None:
    """Was a two-line error: the unknown key was printed raw (fuzz case autofuse_flags 217)."""
    from fuselens.passes.autofuse.flags import parse_autofuse_flags

    message = one_line_error(parse_autofuse_flags, "--enable_autofuse=true;--aut\nofuse_enable_pass=reduce")
    assert "unknown flag '--aut\\nofuse_enable_pass'" in message


@pytest.mark.parametrize(("switch", "words"), [
    ({"Switch": {"Graph\nFusion": {}}}, "unknown section Switch.'Graph\\nFusion'"),
    ({"Switch": {"GraphFusion": {"A\nB": "maybe"}}}, "Switch.GraphFusion.'A\\nB' is 'maybe'"),
])
def test_switch_file_keys_with_a_line_break_stay_on_one_line(switch, words) -> None:
    from fuselens.core.formats.switch_file import parse_switch_file

    assert words in one_line_error(parse_switch_file, json.dumps(switch), "switch.json")


def test_rule_file_keys_with_a_line_break_stay_on_one_line(tmp_path) -> None:
    from fuselens.passes.scope.user_rules import load_rule_file

    path = tmp_path / "rules.json"
    path.write_text(json.dumps({"rules": [{"name": "R", "op_type": "X", "census": {"Mu\nl": "3"},
                                           "outputs": [{"node": "a"}]}]}))
    assert "rules[0].census.'Mu\\nl': must be an integer" in one_line_error(load_rule_file, path)


def test_a_corrupt_constant_in_a_node_named_with_a_line_break_is_one_line(tmp_path) -> None:
    bad = proto.TensorProto(dtype=proto.DT_FLOAT, tensor_shape=proto.shape_proto([2]), tensor_content=b"\0" * 3)
    node = make_node("Const", "w\nx", attrs={"dtype": proto.AttrValue(type=proto.DT_FLOAT),
                                            "value": proto.AttrValue(tensor=bad)})
    path = tmp_path / "bad.pb"
    path.write_bytes(proto.GraphDef(node=[node]).SerializeToString())
    assert "node 'w\\nx' (Const): attribute value has 3 bytes" in one_line_error(load_model, path)


def test_a_yaml_alias_bomb_in_a_rule_file_is_one_quick_error(tmp_path) -> None:
    """Aliases of aliases (~10^8 nodes if expanded): the rule reader must not walk the expansion."""
    from fuselens.passes.scope.user_rules import load_rule_file

    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    lines += ["rules:", "  - name: R", "    op_type: X", "    suffix: s", "    skip_names: *l7",
              "    outputs: [{node: a}]"]
    path = tmp_path / "rules.yaml"
    path.write_text("\n".join(lines) + "\n")
    start = time.perf_counter()
    message = one_line_error(load_rule_file, path)
    assert time.perf_counter() - start < 2.0 and str(path) in message


# ---- found in files owned elsewhere (fixed there) ------------------------------------------------
def test_node_names_with_a_newline_keep_the_graph_error_on_one_line(tmp_path) -> None:
    path = tmp_path / "dangling.pb"
    path.write_bytes(proto.GraphDef(node=[make_node("Relu", "r", ["two\nlines"])]).SerializeToString())
    one_line_error(load_model, path)


def test_a_ge_onnx_desc_index_is_bounded(tmp_path) -> None:
    dump = tmp_path / "ge_onnx_00000000_graph_0_PreRunBegin.pbtxt"
    dump.write_text(textwrap.dedent("""\
        ir_version: 6
        graph {
          name: "ge_default"
          node {
            name: "x"
            op_type: "ge:Data"
            attribute { name: "output_desc_dtype:300000000" type: STRING s: "DT_FLOAT" }
          }
        }
        """))
    child = textwrap.dedent(f"""\
        import resource, signal
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
        from fuselens.core.errors import FuseLensError
        from fuselens.core.ascend.ge.dump import load_dump
        # a bounded reader answers at once: 5 s of this process's own CPU time (not wall time, which a
        # loaded machine stretches), counted from after the imports
        signal.setitimer(signal.ITIMER_VIRTUAL, 5)
        try:
            load_dump({str(dump)!r})
        except FuseLensError:
            pass
        """)
    done = subprocess.run([sys.executable, "-c", child], cwd=harness.ROOT, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-500:]


def test_fusion_result_keys_with_a_newline_stay_on_one_line(tmp_path) -> None:
    from fuselens.core.ascend.ge.fusion_result import read_fusion_result

    path = tmp_path / "fusion_result.json"
    path.write_text(json.dumps({"two\nlines": {}}))
    one_line_error(read_fusion_result, path)


def test_import_profile_reads_an_msprof_json_timeline(tmp_path) -> None:
    from fuselens.core.ascend.profile_import import import_run_file

    (name, data), *_ = harness.FORMATS["msprof_json"].seeds(tmp_path)
    path = tmp_path / name
    path.write_bytes(data)
    assert import_run_file(path).graphs


def test_autofuse_flags_of_only_dashes_on_the_command_line(capsys) -> None:
    from fuselens.cli import main as cli_main

    assert cli_main(["fuse", "abs_relu_exp", "--autofuse-flags=--"]) in (0, 2)
    assert "Traceback" not in capsys.readouterr().err


def test_every_known_bug_has_its_strict_xfail_test() -> None:
    tests = {name for name, value in globals().items() if name.startswith("test_") and callable(value)}
    for bug in harness.KNOWN_BUGS:
        assert bug.test in tests, bug
        marks = [m for m in getattr(globals()[bug.test], "pytestmark", []) if m.name == "xfail"]
        assert marks and marks[0].kwargs["strict"] and bug.owner.split()[0] in marks[0].kwargs["reason"], bug
