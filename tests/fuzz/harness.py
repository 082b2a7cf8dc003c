"""Fuzz every loader and importer with mutated real inputs (tests/fuzz, benchmarks/bench_fuzz.py).

Each format names its real inputs (seeds), how to mutate them, the loader or importer that reads
them, and the command line that reads them. A case passes when the loader either returns or raises
one FuseLensError whose message is one line naming the input; anything else is a bug: another
exception (a traceback for the user), a multi-line message, or no answer within the time limit.
A sample of cases also goes to the command line as a subprocess: exit 0 or 2, at most three lines
on stderr and no "Traceback", and no partial output (the -o / --report files are whole or absent,
with nothing else left in their folder).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from fuselens.core.errors import FuseLensError
from fuselens.core.graph import proto
from tests.fuzz import mutators as m

ROOT = Path(__file__).resolve().parents[2]
CASE_SECONDS = 10.0  # per in-process case; a loader needing longer on a few KB of input hangs
CLI_SECONDS = 120.0  # per command-line case (TensorFlow's import alone takes ~3 s)
SMALL_SAMPLES = ("demo", "conv_bn", "bert_layernorm", "keras_bn_small_ops", "ssd_decode", "abs_relu_exp",
                 "group_conv_bn", "instance_norm", "clip_boxes")


class CaseTimeout(BaseException):
    """Raised by the alarm in a case that runs too long (a BaseException: `except Exception` won't eat it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise CaseTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@dataclass(frozen=True)
class Outcome:
    kind: str  # loaded | error | bug
    detail: str = ""


@dataclass(frozen=True)
class Format:
    """One input format: real seeds (file name, bytes), a mutator, the loader, the command line."""

    name: str
    seeds: Callable[[Path], list[tuple[str, bytes]]]
    mutate: m.Mutator
    load: Callable[[Path], Any]
    cli: Callable[[Path, Path], list[str]] | None = None  # (case file, output folder) -> argv
    names_input: Callable[[Path], str] = str  # what the one-line error must contain
    writes: tuple[str, ...] = ()  # output files the command line may write into the output folder


# ---- one case -------------------------------------------------------------------------------------
def run_case(fmt: Format, path: Path, seconds: float = CASE_SECONDS) -> Outcome:
    """The loader on one file: loaded, the one-line error, or a bug (with what went wrong)."""
    try:
        with time_limit(seconds):
            fmt.load(path)
    except CaseTimeout:
        return Outcome("bug", f"no answer within {seconds:.0f} s")
    except FuseLensError as e:
        message = str(e)
        if not message.strip() or "\n" in message.strip():
            return Outcome("bug", f"FuseLensError of {message.count(chr(10)) + 1} lines: {message[:300]!r}")
        if fmt.names_input(path) not in message:
            return Outcome("bug", f"the error does not name {fmt.names_input(path)}: {message[:300]!r}")
        return Outcome("error", message)
    except BaseException as e:  # everything else is what the user must never see
        if isinstance(e, KeyboardInterrupt):
            raise
        where = traceback.extract_tb(e.__traceback__)[-1]
        return Outcome("bug", f"{type(e).__name__}: {str(e)[:300]} (at {Path(where.filename).name}:{where.lineno})")
    return Outcome("loaded")


def run_cli_case(fmt: Format, path: Path, out_dir: Path, seconds: float = CLI_SECONDS) -> Outcome:
    """`fuselens ...` on one file in a subprocess: exit 0 or 2, <= 3 stderr lines, whole or absent outputs."""
    assert fmt.cli is not None
    out_dir.mkdir(parents=True, exist_ok=True)
    argv = [sys.executable, str(ROOT / "main.py"), *fmt.cli(path, out_dir)]
    if any("\0" in a for a in argv):
        return Outcome("loaded", "skipped: a NUL cannot be passed on a command line")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    try:
        done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return Outcome("bug", f"the command line gave no answer within {seconds:.0f} s")
    stderr = done.stderr.decode("utf-8", "replace")
    lines = stderr.strip().splitlines()
    if done.returncode not in (0, 2) or len(lines) > 3 or "Traceback" in stderr:
        return Outcome("bug", f"exit {done.returncode}, {len(lines)} stderr lines: {stderr[-600:]!r}")
    left = sorted(p.name for p in out_dir.iterdir())
    stray = [name for name in left if name not in fmt.writes]
    if stray:
        return Outcome("bug", f"left {', '.join(stray)} in the output folder (exit {done.returncode})")
    for name in left:
        problem = _whole(out_dir / name)
        if problem:
            return Outcome("bug", f"{name} is not whole: {problem}")
    if done.returncode == 2 and left:
        return Outcome("bug", f"failed (exit 2) but wrote {', '.join(left)}")
    return Outcome("loaded" if done.returncode == 0 else "error", lines[0] if lines else "")


def _whole(path: Path) -> str | None:
    data = path.read_bytes()
    try:
        if path.suffix == ".pb":
            if not proto.GraphDef.FromString(data).node:
                return "an empty GraphDef"
        elif path.suffix == ".json":
            json.loads(data)
    except Exception as e:  # a half-written file fails to parse
        return f"{type(e).__name__}: {str(e)[:200]}"
    return None


# ---- many cases -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class KnownBug:
    """A bug the fuzzer finds in a file this harness's owner may not change: reproduced by a strict
    xfail test in tests/fuzz/test_fuzz_found.py, so the fuzz run reports it without failing on it."""

    format: str
    pattern: str  # regex on the outcome's detail
    test: str  # the strict xfail test that reproduces it
    owner: str  # the file to fix


KNOWN_BUGS: list[KnownBug] = []  # every bug the fuzzer found so far is fixed; see test_fuzz_found.py


def known_bug(fmt: str, detail: str) -> KnownBug | None:
    return next((k for k in KNOWN_BUGS if k.format == fmt and re.search(k.pattern, detail, re.S)), None)


@dataclass
class Report:
    format: str
    cases: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    bugs: list[tuple[int, str, Path]] = field(default_factory=list)  # (case, what, reproducer)
    known: list[tuple[int, KnownBug]] = field(default_factory=list)  # bugs with a strict xfail test already
    seconds: float = 0.0
    cli_cases: int = 0
    cli_outcomes: Counter[str] = field(default_factory=Counter)
    cli_seconds: float = 0.0


def case_input(fmt: Format, seeds: Sequence[tuple[str, bytes]], seed: int, case: int) -> tuple[str, bytes]:
    """The mutated input of one case: reproducible from (format, seed, case)."""
    rng = np.random.default_rng([seed, case, sum(fmt.name.encode())])
    name, data = seeds[int(rng.integers(len(seeds)))]
    return name, fmt.mutate(rng, data, [d for _, d in seeds])


def fuzz(fmt: Format, cases: int, work: Path, *, seed: int = 0, cli_cases: int = 0, workers: int = 2,
         keep: Path | None = None) -> Report:
    """Run `cases` mutated inputs through the loader, and `cli_cases` of them, spread evenly, through the
    command line (`workers` subprocesses at a time).

    Every bug's input is copied to `keep` (default: `work`/bugs) so it can be replayed.
    """
    seeds = fmt.seeds(work / "seeds")
    report = Report(fmt.name)
    keep = keep or work / "bugs"
    cli_every = max(1, cases // cli_cases) if cli_cases and fmt.cli is not None else 0
    for_cli: list[tuple[int, Path]] = []
    start = time.perf_counter()
    for case in range(cases):
        name, data = case_input(fmt, seeds, seed, case)
        folder = work / "cases" / f"{case}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        path.write_bytes(data)
        outcome = run_case(fmt, path)
        report.cases += 1
        report.outcomes[outcome.kind] += 1
        if outcome.kind == "bug":
            _record(report, case, outcome.detail, path, keep)
        if cli_every and case % cli_every == 0 and len(for_cli) < cli_cases:
            for_cli.append((case, _keep(path, work / "cli", fmt.name, case)))
        _remove(folder)
    report.seconds = time.perf_counter() - start
    _run_cli_cases([(fmt, report, case, path) for case, path in for_cli], keep, workers)
    return report


def fuzz_command_line(formats: Sequence[Format], cases: int, work: Path, *, seed: int = 0,
                      workers: int = 2) -> dict[str, Report]:
    """`cases` mutated inputs per format through the command line only, all formats sharing `workers`."""
    reports = {fmt.name: Report(fmt.name) for fmt in formats}
    items = []
    for fmt in formats:
        seeds = fmt.seeds(work / fmt.name / "seeds")
        for case in range(cases):
            name, data = case_input(fmt, seeds, seed, case)
            path = work / fmt.name / "cli" / f"case{case}" / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
            items.append((fmt, reports[fmt.name], case, path))
    _run_cli_cases(items, work / "bugs", workers)
    return reports


def _run_cli_cases(items: Sequence[tuple[Format, Report, int, Path]], keep: Path, workers: int) -> None:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = pool.map(lambda item: run_cli_case(item[0], item[3], item[3].parent / "out"), items)
        for (_fmt, report, case, path), cli in zip(items, outcomes):
            report.cli_cases += 1
            report.cli_outcomes[cli.kind] += 1
            if cli.kind == "bug":
                _record(report, case, f"command line: {cli.detail}", path, keep)
    for _fmt, report, _case, _path in items:
        report.cli_seconds = time.perf_counter() - start


def _record(report: Report, case: int, detail: str, path: Path, keep: Path) -> None:
    found = known_bug(report.format, detail)
    if found is not None:
        report.known.append((case, found))
    else:
        report.bugs.append((case, detail, _keep(path, keep, report.format, case)))


def _keep(path: Path, keep: Path, fmt: str, case: int) -> Path:
    target = keep / fmt / f"case{case}" / path.name  # the name as it was: importers read the kind from it
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(path.read_bytes())
    return target


def _remove(folder: Path) -> None:
    for item in sorted(folder.rglob("*"), reverse=True):
        item.rmdir() if item.is_dir() else item.unlink()
    folder.rmdir()


# ---- the formats ------------------------------------------------------------------------------------
@cache
def _sample_bytes(name: str) -> bytes:
    from fuselens.core.formats.samples import sample_path

    return sample_path(name).read_bytes()


def _load_graph(path: Path) -> None:
    """Load and inspect, then the default passes: `fuselens fuse` without the subprocess."""
    from fuselens.core.formats.loaders import load_model
    from fuselens.core.graph.inspect import summarize
    from fuselens.passes.pipeline import run_pipeline

    graph = load_model(path).graph
    summarize(graph)
    run_pipeline(graph)


def _graphdef_seeds(work: Path) -> list[tuple[str, bytes]]:
    return [(f"{name}.pb", _sample_bytes(name)) for name in SMALL_SAMPLES]


def _pbtxt_seeds(work: Path) -> list[tuple[str, bytes]]:
    return [(f"{name}.pbtxt", m.graphdef_to_text(_sample_bytes(name))) for name in SMALL_SAMPLES[:5]]


def _fuse_cli(path: Path, out: Path) -> list[str]:
    return ["fuse", str(path), "-o", str(out / "fused.pb"), "--report", str(out / "report.json")]


SWITCH_SEEDS = [
    ("switch.json", b'{"Switch": {"GraphFusion": {"ALL": "off", "ConvBatchnormFusionPass": "on", '
                    b'"SoftmaxFusionPass": "on"}, "UBFusion": {"ALL": "off", "TbePool2dQuantFusionPass": "on"}}}\n'),
    ("switch.json", b'{\n  "Switch": {\n    "GraphFusion": {\n      "AutoFusePass": "off",\n'
                    b'      "SmallOpBatchnormFusionPass": "off"\n    }\n  }\n}\n'),
    ("switch.cfg", b"RequantFusionPass:off\nTbeConvDequantVaddReluQuantFusionPass:off\nConvBatchnormFusionPass:on\n"),
    ("switch.cfg", b"# AMCT folds off\nConvBatchnormFusionPass:off\nDepthwiseConvBatchnormFusionPass:off\n"),
]


def _load_switch_file(path: Path) -> None:
    from fuselens.passes.config import PassConfig

    PassConfig.default().with_switch_file(path).to_switch_forms()


FLAG_SEEDS = [b"--enable_autofuse=true;--autofuse_enable_pass=reduce,concat",
              b"--enable_autofuse=true;--max_fusion_size=16", b"--autofuse_enable_pass=reduce",
              b"--enable_autofuse=false", b"--autofuse_disable_pass=broadcast;--recomputation_threshold=4",
              b"--enable_autofuse=true;--autofuse_enable_pass=elementwise,reduce;--max_fusion_size=0"]


def _load_flags(path: Path) -> None:
    from fuselens.passes.config import PassConfig

    text = path.read_bytes().decode("utf-8", "surrogateescape")
    PassConfig.default().with_autofuse_flags(text).autofuse_flags()


def _flags_cli(path: Path, out: Path) -> list[str]:
    text = path.read_bytes().decode("utf-8", "surrogateescape")
    return ["fuse", "abs_relu_exp", f"--autofuse-flags={text}", "-o", str(out / "fused.pb")]


RULE_SEED_JSON = {"rules": [{
    "name": "ScopeMyNormPass", "op_type": "MyNorm", "general": True, "description": "TF1 LayerNorm by hand",
    "patterns": [{"sub_type": "norm", "suffix": "batchnorm",
                  "census": {"Mul": 3, "Rsqrt": 1, "Sub": 1, "Identity": -1, "RealDiv": {"num": 0, "step": 2}}},
                 {"sub_type": "moments", "suffix": "moments", "census": {"Mean": 2, "SquaredDifference": 1}}],
    "pair": ["norm", "moments"],
    "inputs": [{"node": "batchnorm/mul_1"}, {"node": "batchnorm/mul", "input": 1},
               {"node": "batchnorm/sub", "input": 0}],
    "outputs": [{"node": "batchnorm/add_1"}, {"node": "moments/mean", "port": 0}],
    "skip_names": ["while"], "fused_attrs": {"epsilon": 0.001}}]}


def _rule_seeds(work: Path) -> list[tuple[str, bytes]]:
    import yaml

    keras3 = (ROOT / "resources" / "keras3_layer_norm.yaml").read_bytes()
    general = keras3.replace(b"    op_type: LayerNorm\n", b"    op_type: LayerNorm\n    general: true\n")
    return [("rules.yaml", keras3), ("rules.yaml", general), ("rules.json", json.dumps(RULE_SEED_JSON).encode()),
            ("rules.yaml", yaml.safe_dump(RULE_SEED_JSON, sort_keys=False).encode())]


@cache
def _rule_targets() -> tuple[Any, ...]:
    from fuselens.core.formats.loaders import load_model

    return tuple(load_model(name).graph for name in ("demo", "bert_layernorm"))


def _load_rules(path: Path) -> None:
    """Load the rule file, then dry-run each of its rules on two samples with LayerNorm-like scopes."""
    from fuselens.passes.config import PassConfig

    config = PassConfig.default().with_scope_rules(path)
    for rule in config.rules:
        cls = config.get_pass(rule.rule.name)
        for graph in _rule_targets():
            cls(config.options()).dry_run(graph)


def _rules_cli(path: Path, out: Path) -> list[str]:
    return ["fuse", "bert_layernorm", "--scope-rules", str(path), "-o", str(out / "fused.pb")]


@cache
def _npu_files(work: Path) -> dict[str, list[tuple[str, bytes]]]:
    """Real toolchain files, as tests/npu_artifacts.py writes them from FuseLens's samples."""
    from fuselens.core.formats.loaders import load_model
    from tests import npu_artifacts as npu

    folder = work / "npu"
    graph = load_model("demo").graph
    kernels = npu.npu_kernels(graph)
    prof = npu.write_prof_folder(folder, kernels, steps=2, kernel_details=True,
                                 fusion_ops=[("autofuse_pointwise_0_Abs_Relu", ["head/abs", "head/relu"])])
    statistic = ("Device_id,OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
                 + "".join(f"0,{op},AI_VECTOR_CORE,2,{20.0 + i},{9.0 + i},{10.0 + i},{11.0 + i},{5.0}\n"
                           for i, op in enumerate(sorted({k[1] for k in kernels}))))
    csvs = [(p.name, p.read_bytes()) for p in sorted(prof.rglob("*.csv"))]
    csvs.append((f"op_statistic_{npu.STAMP}.csv", statistic.encode()))
    ops = npu.ge_ops(graph)
    small = npu.ge_ops(load_model("conv_bn").graph)
    return {
        "msprof_csv": csvs,
        "msprof_json": [(p.name, p.read_bytes()) for p in sorted(prof.rglob("msprof_*.json"))],
        "ge_dump": [("ge_proto_00000000_graph_0_PreRunBegin.txt", npu.ge_proto_text(ops).encode()),
                    ("ge_proto_00000001_graph_0_Build.txt", npu.ge_proto_text(small, level=1).encode()),
                    ("ge_onnx_00000000_graph_0_PreRunBegin.pbtxt", npu.ge_onnx_text(ops).encode()),
                    ("ge_onnx_00000001_graph_0_Build.pbtxt", npu.ge_onnx_text(small, level=1).encode())],
        "fusion_result": [
            ("fusion_result.json", npu.fusion_result_text(
                {"0_0": {"ConvBatchnormFusionPass": (2, 2), "TransdataCastFusionPass": (3, 1)}},
                ub={"0_0": {"TbeConvDequantVaddReluQuantFusionPass": (1, 1, 0)}}).encode()),
            ("fusion_result.json", npu.fusion_result_text(
                {"0_0": {"AutoFusePass": (4, 4)}, "0_1": {"SoftmaxFusionPass": (1, 0)}}, form="old").encode())],
    }


def _import_profile(path: Path) -> None:
    from fuselens.core.ascend.profile_import import import_run_file

    import_run_file(path)


def _run_file_seeds(work: Path) -> list[tuple[str, bytes]]:
    from fuselens.core.measure.msprof import import_profile

    folder = work / "npu" / "PROF_000001_20260101120000000_ABCDEFGHIJ"
    _npu_files(work)
    result = import_profile(folder)
    return [("run.json", json.dumps(result.to_json()).encode())]


def _load_dump(path: Path) -> None:
    from fuselens.core.ascend.ge.dump import dump_summary, load_dump

    dump_summary(load_dump(path))


def _read_ledger(path: Path) -> None:
    from fuselens.core.ascend.ge.fusion_result import read_fusion_result

    read_fusion_result(path).to_json()


PROFILE_CORPUS = ROOT / "tests" / "corpus" / "profiles"


def _profile_corpus_seeds(work: Path) -> list[tuple[str, bytes]]:
    """Every file of the profile corpus under a name that says nothing of its kind."""
    return [(f"profile{p.suffix}", p.read_bytes()) for p in sorted(PROFILE_CORPUS.iterdir()) if p.is_file()]


def _every_kind_seeds(work: Path) -> list[tuple[str, bytes]]:
    """A file of every kind the dispatcher tells apart, each named `input.bin`."""
    npu = _npu_files(work)
    toolchain = [(p.name, p.read_bytes()) for folder in ("logs", "om_json")
                 for p in sorted((PROFILE_CORPUS.parent / folder).iterdir())]
    files = [*_profile_corpus_seeds(work), *npu["ge_dump"], *npu["fusion_result"], *SWITCH_SEEDS,
             *_run_file_seeds(work), *toolchain]
    return [("input.bin", data) for _, data in files]


def _sniff_and_read(path: Path) -> None:
    """The dispatcher's verdict, then the reader it names (profiles and run files; the other kinds' readers
    are fuzzed as their own formats): a kind, or one line saying what the file looked like."""
    from fuselens.core.ascend import sniff
    from fuselens.core.ascend.profile_import import import_run_file

    kind = sniff.sniff(path)
    if kind is None:
        sniff.require(path, sniff.PROFILES, "a file FuseLens reads")
    elif kind in sniff.PROFILES | {"run_file"} and kind != "fusion_op":
        import_run_file(path)


SKIP_SEEDS = [("skip.txt", b"# keep the stem BN\nConvBatchnormFusionPass:stem/bn\nAutoFusePass:head/exp\n"),
              ("skip.txt", b"SmallOpBatchnormFusionPass:bn_default/batchnorm/add_1\n\n")]


def _read_skip_file(path: Path) -> None:
    from fuselens.passes.config import PassConfig, read_skip_file

    PassConfig.default().with_skipped(read_skip_file(path))


def _text_mutations(extra: Sequence[m.Mutator] = ()) -> m.Mutator:
    return m.compose([*m.TEXT_MUTATORS, *extra])


FORMATS: dict[str, Format] = {f.name: f for f in [
    Format("graphdef_bytes", _graphdef_seeds, m.compose(m.BYTE_MUTATORS), _load_graph, _fuse_cli,
           writes=("fused.pb", "report.json")),
    Format("graphdef_fields", _graphdef_seeds, m.compose([m.graphdef_fields], max_steps=1), _load_graph, _fuse_cli,
           writes=("fused.pb", "report.json")),
    Format("pbtxt", _pbtxt_seeds, _text_mutations([m.pbtxt_fields, m.pbtxt_fields]), _load_graph, _fuse_cli,
           writes=("fused.pb", "report.json")),
    Format("switch_file", lambda work: SWITCH_SEEDS, _text_mutations([m.json_tree, m.json_tree]), _load_switch_file,
           lambda p, out: ["fuse", "conv_bn", "--switch-file", str(p), "-o", str(out / "fused.pb")],
           writes=("fused.pb",)),
    Format("autofuse_flags", lambda work: [("flags.txt", s) for s in FLAG_SEEDS],
           m.compose([m.flags_items, m.flags_items, m.insert_token, m.replace_number, m.truncate]), _load_flags,
           _flags_cli, names_input=lambda path: "AUTOFUSE_FLAGS", writes=("fused.pb",)),
    Format("rule_file", _rule_seeds, _text_mutations([m.yaml_tree, m.yaml_tree, m.json_tree, m.yaml_trick, m.laughs]),
           _load_rules, _rules_cli, writes=("fused.pb",)),
    Format("msprof_csv", lambda work: _npu_files(work)["msprof_csv"], _text_mutations([m.csv_cells] * 4),
           _import_profile, lambda p, out: ["import-profile", str(p)]),
    Format("msprof_json", lambda work: _npu_files(work)["msprof_json"], _text_mutations([m.json_tree] * 3),
           _import_profile, lambda p, out: ["import-profile", str(p)]),
    Format("run_file", _run_file_seeds, _text_mutations([m.json_tree] * 4), _import_profile,
           lambda p, out: ["import-profile", str(p)]),
    Format("ge_dump", lambda work: _npu_files(work)["ge_dump"], _text_mutations([m.replace_quoted, m.edit_lines]),
           _load_dump, lambda p, out: ["inspect", str(p)]),
    Format("fusion_result", lambda work: _npu_files(work)["fusion_result"], _text_mutations([m.json_tree] * 3),
           _read_ledger, lambda p, out: ["ledger", str(p)]),
    Format("profile_corpus", _profile_corpus_seeds, _text_mutations([m.csv_cells, m.csv_cells, m.json_tree]),
           _import_profile, lambda p, out: ["import-profile", str(p)]),
    Format("sniff", _every_kind_seeds, m.compose([*m.BYTE_MUTATORS, *m.TEXT_MUTATORS]), _sniff_and_read,
           lambda p, out: ["import-profile", str(p)]),
    Format("skip_file", lambda work: SKIP_SEEDS, _text_mutations(), _read_skip_file,
           lambda p, out: ["fuse", "conv_bn", "--skip-file", str(p), "-o", str(out / "fused.pb")],
           writes=("fused.pb",)),
]}

