"""bench/bench_dg.py and bench/tune_dg.py run end to end (timing, roofline figures, the tuner's
table entries) against a stand-in for CuPy: NumPy arrays and kernels that do nothing, so their
bookkeeping is checked without a GPU; the timings they print are meaningless."""
import importlib.util
import json
import time
import types
from pathlib import Path

import numpy as np

import wavescat.backend
from wavescat.timedomain.dg.layout import VolumeTuning

BENCH = Path(__file__).parents[3] / "bench"


def fake_cupy(compiled):
    class Event:
        def record(self):
            self.t = time.perf_counter()

        def synchronize(self):
            pass

    class RawModule:
        def __init__(self, code, options):
            self.code = code

        def compile(self):
            compiled.append(self.code)

        def get_function(self, name):
            assert f" {name}(" in self.code or f"\n{name}(" in self.code
            return lambda grid, block, args: None

    class RawKernel:
        def __init__(self, code, name, options):
            assert f" {name}(" in code or f"\n{name}(" in code
            self.max_dynamic_shared_size_bytes = 0

        def __call__(self, grid, block, args, shared_mem=0):
            assert shared_mem <= max(48 * 1024, self.max_dynamic_shared_size_bytes)

    device = types.SimpleNamespace(attributes={"L2CacheSize": 50 << 20, "MultiProcessorCount": 132,
                                               "MaxSharedMemoryPerBlockOptin": 227 * 1024}, use=lambda: None,
                                   compute_capability="90")
    cuda = types.SimpleNamespace(Event=Event, get_elapsed_time=lambda a, b: 1e3 * (b.t - a.t) + 1e-3,
                                 Device=lambda *a: device, runtime=types.SimpleNamespace(getDevice=lambda: 0))
    pool = types.SimpleNamespace(free_all_blocks=lambda: None)
    names = ("asarray", "zeros", "zeros_like", "stack", "concatenate", "ascontiguousarray", "float32", "float64")
    return types.SimpleNamespace(cuda=cuda, RawModule=RawModule, RawKernel=RawKernel, get_default_memory_pool=lambda: pool,
                                 **{n: getattr(np, n) for n in names})


def load(monkeypatch, name):
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_runs_the_defaults(monkeypatch, tmp_path, capsys):
    compiled = []
    monkeypatch.setattr(wavescat.backend, "_probe_gpu", lambda: (fake_cupy(compiled), "NVIDIA H200", 1))
    out = tmp_path / "b.json"
    assert load(monkeypatch, "bench_dg").main(["--orders", "1", "3", "--nodes", "3e3", "--precisions", "single",
                                               "double", "--repeats", "1", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.count("Gnode/s") == 4 and "tensor=True" in text  # N = 3 takes the tensor-core table at cc 9.0
    result = json.loads(out.read_text())
    assert [(r["order"], r["precision"]) for r in result["rows"]] == [(1, "single"), (1, "double"),
                                                                       (3, "single"), (3, "double")]


def test_tune_runs_and_prints_table_entries(monkeypatch, tmp_path, capsys):
    compiled = []
    monkeypatch.setattr(wavescat.backend, "_probe_gpu", lambda: (fake_cupy(compiled), "NVIDIA H200", 1))
    out = tmp_path / "t.json"
    assert load(monkeypatch, "tune_dg").main(["--orders", "1", "3", "--nodes", "3e3", "--precisions", "single",
                                              "double", "--repeats", "1", "--jobs", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "skipped" not in text
    # one tuning.json entry per order and precision, each under the table of its layout
    tables = text.split("\nEntries for tuning.json, table ")[1:]
    entries = [json.loads("{" + e.strip().rstrip(",") + "}") for t in tables for e in t.splitlines()[1:]]
    assert len(entries) == 4
    for t in tables:
        head, *lines = t.splitlines()
        tensor = head.startswith('"layout": "tensor"')
        for line in lines:
            (npn, fields), = json.loads("{" + line.strip().rstrip(",") + "}").items()
            assert npn in ("4", "20") and fields.get("tensor", False) == tensor
            VolumeTuning(**fields)
    result = json.loads(out.read_text())
    assert {r["order"] for r in result["tune"]} == {1, 3} and len(result["tune"]) == 4
    assert len(compiled) > 20 and all("dg_volume" in c for c in compiled)
