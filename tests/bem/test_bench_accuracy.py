"""bench/bench_dense_assembly.py --accuracy: errors against the reference quadrature, and of a
peer's matrix given as a file (here the reference itself, so its errors are zero)."""
import importlib.util
from pathlib import Path

import numpy as np

BENCH = Path(__file__).parents[2] / "bench" / "bench_dense_assembly.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_dense_assembly", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_matrix_errors_of_a_scaled_matrix():
    bench = load_bench()
    ref = np.random.default_rng(1).standard_normal((30, 30)) + 1j
    fro, entry, mv = bench.matrix_errors(1.001 * ref, ref)
    assert np.allclose([fro, entry, mv], 1e-3)


def test_accuracy_mode_reports_default_and_peer_errors(tmp_path, capsys):
    bench = load_bench()
    from wavescat.backend import get_backend
    from wavescat.bem.assembly import operators
    from wavescat.bem.discretisation import spaces

    mesh = bench.geodesic_sphere(2)
    space = spaces.p1(mesh)
    k = 2 * np.pi / (10 * mesh.edge_lengths.mean())
    ref = operators.EntryEvaluator("double_layer", space, space, k, backend=get_backend("cpu"),
                                   quadrature=bench.REFERENCE).dense()
    np.save(tmp_path / "peer.npy", ref)
    bench.main(["--accuracy", "2", "--operators", "double_layer", "--peer", f"double_layer:peer={tmp_path / 'peer.npy'}"])
    rows = {line.split()[2]: [float(x) for x in line.split()[3:]] for line in capsys.readouterr().out.splitlines()
            if line.startswith("double_layer")}
    assert rows["peer"] == [0.0, 0.0, 0.0]
    assert all(0 < e < 1e-4 for e in rows["wavescat"])  # default quadrature: close to the reference
