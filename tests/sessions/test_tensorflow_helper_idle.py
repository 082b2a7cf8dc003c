"""The TensorFlow helper answers a fusion before it imports TensorFlow: "warm" waits until the helper
is idle, so the first fusion of a model is not queued behind TensorFlow's ~3 s import."""

from __future__ import annotations

import threading
import time
from multiprocessing import Pipe

from fuselens.passes.config import PassConfig
from fuselens.passes.registry import catalog
from fuselens.session import tensorflow_helper
from fuselens.session.session import FusionJob


def test_a_fusion_is_answered_before_tensorflow_is_imported_and_the_import_waits_for_idle(load_sample,
                                                                                           monkeypatch):
    monkeypatch.setattr(tensorflow_helper, "IDLE_BEFORE_IMPORT_S", 0.2)
    imported: list[float] = []
    window, helper = Pipe()
    serving = threading.Thread(target=tensorflow_helper._serve, args=(helper, lambda: imported.append(time.time())))
    serving.start()
    try:
        window.send((1, "warm", None))
        job = FusionJob(1, load_sample("abs_relu_exp"), PassConfig.default())
        window.send((2, "fuse", (job, [(c.__module__, c.__qualname__) for c in catalog()])))
        replies = []
        while not replies or replies[-1][1] != "pieces":
            replies.append(window.recv())
        pipeline = tensorflow_helper.unpickle_pieces([window.recv_bytes() for _ in range(replies[-1][2])], job.graph)
        answered = time.time()
        assert replies[-1][0] == 2 and "AscBackend" in pipeline.fused.op_histogram()
        assert not imported, "TensorFlow was imported before the fusion was answered"
        deadline = time.time() + 10
        while not imported and time.time() < deadline:
            time.sleep(0.02)
        assert imported and imported[0] - answered >= 0.15  # once idle, not right after the reply
    finally:
        window.close()
        serving.join(5)
    assert not serving.is_alive()
