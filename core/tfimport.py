"""Import TensorFlow without its C++ start-up chatter on the user's terminal.

TF 2.21 writes oneDNN/CUDA notices to file descriptor 2 before its logging is configured, so
TF_CPP_MIN_LOG_LEVEL cannot hide them. Core and passes import TensorFlow through here, with
three exceptions that import it themselves: resources/build_samples.py (also when core.formats.samples
builds a cached sample on first use, if nothing imported TensorFlow before), the runner's child
process (core/runtime/child.py) and the script written for the NPU machine.
Python exceptions raised by the import still propagate.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType


def import_tensorflow() -> ModuleType:
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        sys.stderr.flush()
        os.dup2(devnull, 2)
        import tensorflow
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
    return tensorflow
