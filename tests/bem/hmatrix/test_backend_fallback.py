"""Backend choice without a GPU: `auto` runs on the CPU and says why, `gpu` is an error."""
import logging

import numpy as np
import pytest

from wavescat import backend
from wavescat.bem.assembly.hmatrix import assemble_from_clouds
from wavescat.errors import BackendError


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(backend, "_probe_gpu", lambda: "CuPy sees no CUDA device")


def test_auto_falls_back_to_the_cpu_and_says_so(no_gpu, caplog):
    with caplog.at_level(logging.INFO, logger=backend.log.name):
        be = backend.get_backend("auto")
    assert not be.is_gpu and be.xp is np
    assert be.describe()["reason"] == "auto: no GPU (CuPy sees no CUDA device)"
    assert "running on the CPU (CuPy sees no CUDA device)" in caplog.text


def test_gpu_without_one_is_a_clear_error(no_gpu):
    with pytest.raises(BackendError, match=r"backend 'gpu' asked for, but no GPU is usable: CuPy sees no"):
        backend.get_backend("gpu")


def test_hmatrix_report_names_the_cpu_fallback(no_gpu, vertex_cloud):
    H = assemble_from_clouds("single_layer", 0.0, vertex_cloud, vertex_cloud, backend="auto")
    rep = H.report["backend"]
    assert rep["backend"] == "cpu" and rep["reason"].startswith("auto: no GPU")
    with pytest.raises(BackendError, match="no GPU is usable"):
        assemble_from_clouds("single_layer", 0.0, vertex_cloud, vertex_cloud, backend="gpu")
