"""A fresh machine against a warm one: the same solve run twice, each in a process of its own,
first with empty kernel caches (CuPy's NVRTC cache and Numba's, in new folders: what a new
machine or cluster node has), then with the caches the first run filled.

    PYTHONUNBUFFERED=1 python bench/bench_cold_start.py --mesh-dir DIR --freq 2000 \
        [--runs cold warm] [-- more bench_submarine.py arguments]

Each run is `bench/bench_submarine.py --backend gpu` on the default submarine (its stages
print as they end). Printed per run: the wall time of the process, and the time spent
compiling: NVRTC (CuPy's RawModules and its own elementwise and reduction kernels; count
and seconds) and Numba (functions compiled, seconds). The goal: cold within 1.3 times of
warm. A cold run starts with the kernel warm-up of src/wavescat/kernel_cache.py, as every
GPU solve on a fresh cache does (its log line gives its time); NVRTC's count here is what the
process compiled itself.
"""
from __future__ import annotations

import argparse
import atexit
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _count_compiles():
    """Wrap NVRTC's compile and listen to Numba's compile events; print the totals at exit."""
    totals = {"nvrtc": [0, 0.0], "numba": [0, 0.0]}
    each = []  # (seconds, kind, name) of every compile
    try:
        from cupy.cuda import compiler  # noqa: PLC0415

        compile_nvrtc = compiler._compile_using_nvrtc_no_warning  # what every compile calls

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return compile_nvrtc(*args, **kwargs)
            finally:
                dt = time.perf_counter() - t0
                totals["nvrtc"][0] += 1
                totals["nvrtc"][1] += dt
                name = re.search(r"__global__\s+void\s+(\w+)", str(args[0] if args else ""))
                each.append((dt, "nvrtc", name.group(1) if name else "?"))

        compiler._compile_using_nvrtc_no_warning = timed
    except ImportError:
        pass
    from numba.core import event  # noqa: PLC0415

    class Listener(event.Listener):
        def __init__(self):
            self.depth, self.t0 = 0, 0.0

        def on_start(self, ev):  # nested compiles (callees) count in their caller's time
            if self.depth == 0:
                self.t0 = time.perf_counter()
            self.depth += 1

        def on_end(self, ev):
            self.depth -= 1
            totals["numba"][0] += 1
            if self.depth == 0:
                dt = time.perf_counter() - self.t0
                totals["numba"][1] += dt
                each.append((dt, "numba", str(getattr(ev.data.get("dispatcher"), "__name__", "?"))))

    event.register("numba:compile", Listener())

    @atexit.register
    def report():
        for dt, kind, name in sorted(each, reverse=True)[:25]:
            print(f"COMPILE {kind} {name} {dt:.2f} s")
        print(f"COMPILES nvrtc {totals['nvrtc'][0]} in {totals['nvrtc'][1]:.1f} s; "
              f"numba {totals['numba'][0]} in {totals['numba'][1]:.1f} s", flush=True)


def child(argv):
    _count_compiles()
    sys.argv = [str(HERE / "bench_submarine.py"), *argv]
    runpy.run_path(sys.argv[0], run_name="__main__")


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        return child(argv[1:])
    rest = []
    if "--" in argv:
        i = argv.index("--")
        argv, rest = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mesh-dir", required=True)
    ap.add_argument("--freq", type=float, nargs="+", default=[2000.0])
    ap.add_argument("--runs", nargs="+", default=["cold", "warm"], choices=["cold", "warm"])
    args = ap.parse_args(argv)
    caches = Path(tempfile.mkdtemp(prefix="wavescat-kernel-caches-"))
    env = {**os.environ, "CUPY_CACHE_DIR": str(caches / "cupy"),
           "NUMBA_CACHE_DIR": str(caches / "numba"), "PYTHONUNBUFFERED": "1"}
    walls = {}
    for run in args.runs:
        if run == "cold":  # empty caches, as on a new machine
            subprocess.run(["rm", "-rf", str(caches / "cupy"), str(caches / "numba")], check=True)
        cmd = [sys.executable, __file__, "--child", "--backend", "gpu", "--mesh-dir",
               args.mesh_dir, "--freq", *[f"{f:g}" for f in args.freq], *rest]
        print(f"== {run}: {' '.join(cmd[2:])}", flush=True)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True)
        walls[run] = time.perf_counter() - t0
        print(f"== {run}: {walls[run]:.1f} s wall", flush=True)
    if "cold" in walls and "warm" in walls:
        print(f"cold / warm: {walls['cold'] / walls['warm']:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
