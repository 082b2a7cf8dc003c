"""Session transitions without widgets: load -> draw -> fuse -> shapes, superseded jobs dropped."""

from __future__ import annotations

import pytest

from fuselens.core.formats.loaders import load_model
from fuselens.passes.config import PassConfig
from fuselens.passes.pipeline import run_pipeline
from fuselens.session import Session, Stage


@pytest.fixture(scope="module")
def model():
    return load_model("conv_bn")


@pytest.fixture
def session():
    recorded: list[str] = []
    session = Session()
    session.subscribe(recorded.append)
    session.recorded = recorded  # type: ignore[attr-defined]
    return session


def fuse(job):
    return run_pipeline(job.graph, job.config)


def test_open_draw_fuse_shapes_ready(session, model):
    assert session.stage is Stage.EMPTY and session.graph("before") is None
    session.start_loading()
    assert session.stage is Stage.LOADING and session.first_fusion() is None  # nothing to draw yet
    session.set_model(model)
    assert session.stage is Stage.DRAWING and session.graph("before") is model.graph
    job = session.first_fusion()
    assert session.stage is Stage.FUSING and job.graph is model.graph and job.config is session.config
    assert session.first_fusion() is None  # the first fusion starts once
    assert session.fusion_done(job, fuse(job))
    assert session.stage is Stage.SHAPES and session.graph("after") is session.pipeline.fused
    assert session.shapes_done(job) and session.stage is Stage.READY
    assert {"model", "pipeline", "stage", "shapes"} <= set(session.recorded)


def test_a_config_change_while_fusing_supersedes_the_running_job(session, model):
    session.set_model(model)
    first = session.first_fusion()
    off = session.config.with_pass("ConvBatchnormFusionPass", False)
    second = session.set_config(off)
    assert second is not None and second.config is off and not session.is_current(first)
    assert not session.fusion_done(first, fuse(first))  # stale: dropped
    assert session.pipeline is None and session.stage is Stage.FUSING
    assert not session.shapes_done(first) and not session.job_failed(first)
    assert session.fusion_done(second, fuse(second))
    assert session.pipeline.config is off and "ConvBatchnormFusionPass" not in session.pipeline.config.pass_ids()


def test_a_config_change_during_shapes_supersedes_them_too(session, model):
    session.set_model(model)
    job = session.first_fusion()
    session.fusion_done(job, fuse(job))
    newer = session.set_config(session.config.with_pass("ConvBatchnormFusionPass", False))
    assert session.stage is Stage.FUSING and not session.shapes_done(job)
    assert session.fusion_done(newer, fuse(newer)) and session.shapes_done(newer)
    assert session.stage is Stage.READY


def test_config_set_while_drawing_is_the_one_the_first_fusion_uses(session, model):
    session.set_model(model)
    config = PassConfig.from_ids([])
    assert session.set_config(config) is None and session.stage is Stage.DRAWING
    assert session.first_fusion().config is config


def test_opening_another_model_drops_the_previous_models_fusion(session, model):
    session.set_model(model)
    job = session.first_fusion()
    session.start_loading()
    other = load_model("abs_relu_exp")
    session.set_model(other)
    assert not session.fusion_done(job, fuse(job)) and session.pipeline is None
    assert session.stage is Stage.DRAWING and session.collapsed == {"before": None, "after": None}


def test_a_failed_load_keeps_the_open_model_and_its_stage(session, model):
    session.start_loading()
    session.load_failed()
    assert session.stage is Stage.EMPTY
    session.set_model(model)
    job = session.first_fusion()
    session.start_loading()
    assert session.fusion_done(job, fuse(job))  # the open model's fusion still lands while another loads
    assert session.stage is Stage.LOADING
    session.load_failed()
    assert session.stage is Stage.SHAPES and session.model is model


def test_a_model_drawn_while_another_loads_is_fused_and_settles_when_that_load_fails(session, model):
    session.set_model(model)
    session.start_loading()  # another model opened before this one's first paint
    job = session.first_fusion()  # its original graph is on screen now
    assert job is not None and session.stage is Stage.LOADING
    session.load_failed()
    assert session.stage is Stage.FUSING and session.first_fusion() is None
    assert session.fusion_done(job, fuse(job)) and session.shapes_done(job)
    assert session.stage is Stage.READY and not session.busy


def test_a_failed_job_settles_and_can_be_retried(session, model):
    session.set_model(model)
    job = session.first_fusion()
    assert session.job_failed(job) and session.stage is Stage.READY
    retry = session.set_config(session.config)  # the same configuration, fused again
    assert retry is not None and session.stage is Stage.FUSING and retry.number > job.number


def test_collapsed_scopes_and_runs_are_session_state(session, model):
    session.set_model(model)
    session.set_collapsed("before", frozenset({"a/b"}))
    assert session.collapsed["before"] == {"a/b"} and "collapsed" in session.recorded
    session.set_model(model)
    assert session.collapsed["before"] is None and session.last_run is None  # automatic again
