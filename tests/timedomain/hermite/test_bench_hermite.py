"""bench/bench_hermite.py's options become HermiteSolver arguments (no environment variables)."""
import argparse
import importlib.util
from pathlib import Path

from wavescat.timedomain.hermite.gpu_propagator import Tile

BENCH = Path(__file__).parents[3] / "bench" / "bench_hermite.py"


def load():
    spec = importlib.util.spec_from_file_location("bench_hermite", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_become_solver_arguments():
    bench = load()
    args = argparse.Namespace(tiles=["32x8x0", "32x9x0", "16x4x2"], cells_per_block=[0, 8])
    # m = 3 in fp32: rows shrink to 6 to fit 48 KiB, so 32x8x0 and 32x9x0 are one tile
    assert bench._settings("propagator", 3, args) == [{"tile": Tile(32, 6, 0)}, {"tile": Tile(16, 4, 2)}]
    assert bench._settings("monolithic-shared", 1, args) == [{"cells_per_block": None}, {"cells_per_block": 8}]
    assert bench._settings("monolithic-register", 1, args) == [{}]
    assert bench._settings("monolithic-register", 3, args) == []  # a cell does not fit in registers
