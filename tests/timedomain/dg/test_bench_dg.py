"""bench/bench_dg.py runs end to end (timing, roofline figures, --tune, table lines) against a
stand-in for CuPy: NumPy arrays and kernels that do nothing, so its bookkeeping is checked
without a GPU; the timings it prints are meaningless."""
import importlib.util
import json
import time
import types
from pathlib import Path

import numpy as np

import wavescat.backend

BENCH = Path(__file__).parents[3] / "bench" / "bench_dg.py"


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


def test_bench_tune_runs_and_prints_table_lines(monkeypatch, tmp_path, capsys):
    compiled = []
    monkeypatch.setattr(wavescat.backend, "_probe_gpu", lambda: (fake_cupy(compiled), "NVIDIA H200", 1))
    spec = importlib.util.spec_from_file_location("bench_dg", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "b.json"
    assert bench.main(["--orders", "1", "3", "--nodes", "3e3", "--precisions", "single", "double",
                       "--repeats", "1", "--tune", "--jobs", "2", "--json", str(out)]) == 0
    text = capsys.readouterr().out
    assert "previous " in text and "skipped" not in text
    # one table line per order and precision, each under the table of its layout
    tables = text.split("\nLines for gpu_kernels.")[1:]
    assert tables and sum(t.count(": VolumeTuning(") for t in tables) == 4
    for t in tables:
        name, entries = t.split(" ", 1)[0], [e for e in t.splitlines() if ": VolumeTuning(" in e]
        assert name in ("VOLUME_TUNING", "VOLUME_TUNING_FP64", "TENSOR_TUNING", "TENSOR_TUNING_FP64")
        assert all(("tensor=True" in e) == name.startswith("TENSOR") for e in entries)
        assert all(e.startswith(("    4: ", "    20: ")) for e in entries)
    result = json.loads(out.read_text())
    assert {r["order"] for r in result["rows"]} == {1, 3} and len(result["tune"]) == 4
    assert len(compiled) > 20 and all("dg_volume" in c for c in compiled)
