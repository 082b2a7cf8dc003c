"""`fuse --watch`: the result printed once, then again on every save (a save by rename too), until stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from fuselens.cli import main as cli_main
from fuselens.core.formats.samples import sample_path
from fuselens.core.package_data import child_environ, resource


def _wait_for(process: subprocess.Popen, text: str, count: int, output: list[str], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while "".join(output).count(text) < count:
        assert time.monotonic() < deadline and process.poll() is None, "".join(output)
        output.append(os.read(process.stdout.fileno(), 65536).decode())


def test_fuse_watch_fuses_again_on_each_save(tmp_path):
    model = tmp_path / "conv_bn.pb"
    model.write_bytes(sample_path("conv_bn").read_bytes())
    process = subprocess.Popen([sys.executable, "-m", "fuselens", "fuse", str(model), "--watch"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=child_environ())
    output: list[str] = []
    try:
        _wait_for(process, "fuselens: watching", 1, output)
        assert "".join(output).count("op counts:") == 1
        saved = tmp_path / "conv_bn.pb.new"
        saved.write_bytes(model.read_bytes())
        os.replace(saved, model)  # an editor's save by rename
        _wait_for(process, "saved: fusing again", 1, output)
        _wait_for(process, "op counts:", 2, output)
        rows = [line.split()[:3] for line in "".join(output).splitlines()]
        assert rows.count(["ConvBatchnormFusionPass", "1", "matches"]) == 2  # the result, printed again
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0  # Ctrl+C ends the watch, no traceback
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()


def test_fuse_watch_runs_the_pass_file_again_on_each_save_and_survives_its_errors(tmp_path):
    """A --py-pass file saved: its pass's new counts printed; a syntax error printed as the user's line, the
    watch going on; fixed again, the counts are back."""
    path = tmp_path / "my_pass.py"
    text = resource("ge_passes", "matmul_add_gemm.py").read_text()
    path.write_text(text)
    process = subprocess.Popen([sys.executable, "-m", "fuselens", "fuse", "matmul_add_chain", "--py-pass", str(path),
                                "--watch"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=child_environ())
    output: list[str] = []

    def rows() -> list[list[str]]:
        return [line.split()[:3] for line in "".join(output).splitlines()]

    try:
        _wait_for(process, "fuselens: watching", 1, output)
        assert rows().count(["MatMulAddToGemmPass", "2", "matches"]) == 1
        _save(path, text.replace("return MatMulV2(a, b) + c", "return MatMulV2(a, b) * c"))
        _wait_for(process, "op counts:", 2, output)
        assert rows().count(["MatMulAddToGemmPass", "1", "matches"]) == 1  # the BiasAdd pattern alone now
        _save(path, "def broken(:\n")
        _wait_for(process, "SyntaxError", 1, output)
        assert f"{path}, line 1: SyntaxError" in "".join(output)
        _save(path, text)
        _wait_for(process, "op counts:", 3, output)
        assert rows().count(["MatMulAddToGemmPass", "2", "matches"]) == 2
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


def _save(path, text: str) -> None:
    saved = path.with_name(path.name + ".new")
    saved.write_text(text)
    os.replace(saved, path)


def test_fuse_watch_needs_something_to_watch(capsys):
    assert cli_main(["fuse", "conv_bn", "--watch"]) == 2
    assert "--watch watches the model file and the --py-pass files: conv_bn is no file" in capsys.readouterr().err
