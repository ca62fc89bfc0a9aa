"""What fits: cases that cannot fit are refused before any job, dense operators are checked
before they are allocated, and an out-of-memory anywhere becomes a message naming the stage."""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from wavescat import memory
from wavescat.planning import preflight, resources
from wavescat.configuration.case import Case
from wavescat.cli import main
from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError, ResourceError
from wavescat.progress import progress

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def default():
    with open(ROOT / "config" / "config.yaml") as fh:
        return yaml.safe_load(fh)


def _prepared(default, **changes):
    cfg = copy.deepcopy(default)
    for key, value in changes.items():
        case, field = key.split("__")
        cfg["cases"][case][field] = value
    return cfg


def test_unknowns_follow_area_over_element_area(default):
    """7.5e10 unknowns for the 62 m submarine at 1 MHz: 1.1 (area / (sqrt(3)/4 h^2)) / 2, h = c/(10 f)."""
    cfg = prepare_config(_prepared(default, submarine__frequencies_hz=[1e6]), base_dir=ROOT)
    est = resources.case_estimates(Case.from_config(cfg, "submarine"), gpu=False)
    h = 1500.0 / (1e6 * 10)
    area = 1.15 * 0.85 * np.pi * 7.0 * 62.0
    assert est["unknowns"] == pytest.approx(1.1 * area / (np.sqrt(3) / 4 * h * h) / 2, rel=1e-6)
    assert est["format"] == "hmatrix"


def test_megahertz_submarine_refused_naming_case_frequency_estimate_limit(default):
    cfg = prepare_config(_prepared(default, submarine__frequencies_hz=[1e6]), base_dir=ROOT)
    with pytest.raises(ConfigError) as err:
        preflight.check_limits(cfg, ["sphere_ka5", "submarine"])
    msg = str(err.value)
    assert "case 'submarine' at 1e+06 Hz" in msg and "7.52e+10 unknowns" in msg
    assert "meshing needs about 188 TB" in msg and "of host memory" in msg
    assert "limits.host_memory_gb" in msg


def test_limits_override_the_machine(default, monkeypatch):
    monkeypatch.setattr(preflight, "host_memory_bytes", lambda: 64e9)
    cfg = _prepared(default, sphere_ka5__solver={"operator_format": "dense"},
                    sphere_ka5__frequencies_hz=[6000.0])  # ~25,000 unknowns, dense: ~23 GB
    prepared = prepare_config(cfg, base_dir=ROOT)
    preflight.check_limits(prepared, ["sphere_ka5"])  # fits 64 GB
    cfg["limits"] = {"host_memory_gb": 8}
    with pytest.raises(ConfigError, match=r"case 'sphere_ka5' at 6000 Hz .* the dense solve needs "
                       r"about \d+\.\d GB, more than the 8 GB of host memory \(limits\.host_memory_gb"
                       r" = 8\) \(operator_format: hmatrix needs less\)"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])
    cfg["limits"] = {"max_unknowns": 10_000}
    with pytest.raises(ConfigError, match="more than limits.max_unknowns = 10000"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])


def test_gpu_solve_checked_against_gpu_memory(default, monkeypatch):
    monkeypatch.setattr(preflight, "gpu_memory_bytes", lambda: 16e9)
    cfg = _prepared(default, sphere_ka5__solver={"operator_format": "dense", "backend": "gpu"},
                    sphere_ka5__frequencies_hz=[6000.0])
    with pytest.raises(ConfigError, match=r"dense solve on the GPU needs about \d+\.\d GB, more "
                       r"than the 16 GB of GPU memory"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])
    cfg["limits"] = {"gpu_memory_gb": 80}
    preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])


def test_gpu_hmatrix_blocks_may_use_the_host(default, monkeypatch):
    """An H-matrix solve on a GPU: its blocks may move to host memory (host_blocks.py), so
    they count against the GPU's and the host's memory together; the rest against the GPU's."""
    from wavescat.planning.resources import case_estimates
    from wavescat.configuration.case import Case

    monkeypatch.setattr(preflight, "gpu_memory_bytes", lambda: 16e9)
    monkeypatch.setattr(preflight, "host_memory_bytes", lambda: 64e9)
    cfg = _prepared(default, sphere_ka5__solver={"operator_format": "hmatrix", "backend": "gpu"},
                    sphere_ka5__frequencies_hz=[20000.0])
    prepared = prepare_config(cfg, base_dir=ROOT)
    est = case_estimates(Case.from_config(prepared, "sphere_ka5"), True)
    blocks, rest = est["solve_gpu_movable_bytes"], est["solve_gpu_bytes"] - est["solve_gpu_movable_bytes"]
    assert blocks > 0 and rest > 0
    total = (est["solve_gpu_bytes"] + est["solve_host_bytes"]) / 1e9
    # the blocks beyond the card, the rest on it: runs
    cfg["limits"] = {"gpu_memory_gb": max(rest / 1e9 * 1.01, blocks / 2e9),
                     "host_memory_gb": total}
    preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])
    # the two memories together too small: refused, naming both
    cfg["limits"] = {"gpu_memory_gb": rest / 1e9 * 1.01, "host_memory_gb": total * 0.5}
    with pytest.raises(ConfigError, match=r"the hmatrix solve \(its blocks on the GPU or moved to "
                       r"the host\) needs about .* GPU and host memory together"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])
    # what cannot move, more than the card: refused as before
    cfg["limits"] = {"gpu_memory_gb": rest / 1e9 * 0.5, "host_memory_gb": 10 * total}
    with pytest.raises(ConfigError, match=r"the hmatrix solve on the GPU needs about"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["sphere_ka5"])


def test_workflow_refuses_megahertz_submarine_before_meshing(tmp_path):
    (tmp_path / "big.yaml").write_text("run: [sub]\ncases:\n  sub:\n    geometry: {kind: submarine}\n"
                                       "    frequencies_hz: [1.0e+6]\n")
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"),
                          "--configfile=big.yaml", "--cores", "1", "target_strength"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode != 0
    assert "case 'sub' at 1e+06 Hz (about 7.52e+10 unknowns): meshing needs about 188 TB" in text
    assert "Building DAG" not in text and not (tmp_path / "results").exists()


def test_dense_operator_checked_before_allocation(monkeypatch):
    from wavescat.bem.assembly import operators
    from wavescat.bem.discretisation import spaces
    from wavescat.geometry.icosphere import icosphere

    space = spaces.function_space(icosphere(2), "P1")
    n = space.n_dofs
    available = 32 * n * n - 1
    monkeypatch.setattr(memory, "available_host_bytes", lambda: available)
    # the double layer needs its float64 (re, im) accumulator and the transposed twin: 32 n^2
    with pytest.raises(ResourceError) as err:
        operators.assemble("double_layer", space, space, 2.0)
    assert str(err.value) == (f"dense operator of {n} unknowns needs {32 * n * n / 2**30:.3g} GiB, "
                              f"{available / 2**30:.3g} GiB of host memory available; "
                              "use operator_format: hmatrix")
    # the hypersingular operator has no twin: 16 n^2 fits
    assert operators.assemble("hypersingular", space, space, 2.0).shape == (n, n)


class OutOfMemoryError(MemoryError):
    """Stands in for cupy.cuda.memory.OutOfMemoryError (a MemoryError raised by CuPy)."""

    __module__ = "cupy.cuda.memory"


def test_gpu_out_of_memory_becomes_an_error_naming_stage_and_size(monkeypatch, capsys):
    from wavescat.commands import dg

    def run_out_of_memory(args):
        with progress(10, "DG scattering N=4, 36502 elements", "steps"):
            raise OutOfMemoryError("Out of memory allocating 5,368,709,120 bytes "
                                   "(allocated so far: 70,000,000,000 bytes).")

    monkeypatch.setattr(dg, "verify_dg", run_out_of_memory)
    assert main(["verify-dg", "--csv", "a.csv", "--plot", "a.png"]) == 2
    err = capsys.readouterr().err
    assert ("wavescat verify-dg: error: out of GPU memory in 'DG scattering N=4, 36502 elements':"
            " Out of memory allocating 5,368,709,120 bytes") in err
    assert "Traceback" not in err


def test_host_out_of_memory_names_the_open_stage(monkeypatch, capsys):
    from wavescat.commands import dg

    def run_out_of_memory(args):
        bar = progress(10, "assembly hypersingular", "elements")  # not a `with`: left open
        np.zeros((10**6, 10**6))
        bar.close()

    monkeypatch.setattr(dg, "verify_dg", run_out_of_memory)
    assert main(["verify-dg", "--csv", "a.csv", "--plot", "a.png"]) == 2
    err = capsys.readouterr().err
    assert "out of host memory in 'assembly hypersingular': Unable to allocate" in err


def test_other_errors_still_raise(monkeypatch):
    from wavescat.commands import dg

    monkeypatch.setattr(dg, "verify_dg", lambda args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        main(["verify-dg", "--csv", "a.csv", "--plot", "a.png"])


def test_numba_threads_follow_the_jobs_threads():
    """Snakemake passes a rule's threads as OMP_NUM_THREADS; Numba's pool must follow it,
    whether Numba is already imported or not."""
    import os

    for code in ("import numba, wavescat.backend as b; b.follow_job_threads()",
                 "import wavescat.backend as b; b.follow_job_threads(); import numba"):
        out = subprocess.run([sys.executable, "-c", code + "; print(numba.get_num_threads())"],
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "OMP_NUM_THREADS": "1"})
        assert out.stdout.strip() == "1", out.stderr


def test_gpu_out_of_memory_in_dense_assembly_names_operator_and_size(monkeypatch):
    from wavescat.bem.assembly import operators
    from wavescat.bem.discretisation import spaces
    from wavescat.geometry.icosphere import icosphere

    def fail(self):
        raise OutOfMemoryError("Out of memory allocating 335,923,200 bytes (allocated so far: 0 bytes).")

    monkeypatch.setattr(operators.EntryEvaluator, "_dense", fail)
    space = spaces.function_space(icosphere(2), "P1")
    with pytest.raises(MemoryError) as err:
        operators.assemble("double_layer", space, space, 2.0)
    n = space.n_dofs
    assert memory.out_of_memory_message(err.value, "solve").startswith(
        f"out of GPU memory in 'dense assembly of double_layer ({n} x {n})': Out of memory "
        "allocating 335,923,200 bytes")


@pytest.mark.parametrize("geometry, frequency, low", [
    ({"kind": "sphere", "radius": 1.0}, 477.46, 0.85),  # sphere_ka2 of verify_dg
    # the sag model only: the tips' extra refinement (16 elements per turn) is not counted
    # (856 of 1599 since the spheroid is checked against its exact volume: no coarser retry)
    ({"kind": "spheroid", "semi_axes": [0.75, 0.3, 0.2]}, 600.0, 0.5),
])
def test_unknowns_estimate_follows_the_geometry_sizing(geometry, frequency, low):
    """At low frequency the geometry sizes the mesh, not the wavelength: the estimate that the
    memory requests and limits use must count those unknowns too (it counted 162 of 644)."""
    from wavescat.geometry import mesh_case

    cfg = {"run": ["b"], "cases": {"b": {"geometry": geometry, "frequencies_hz": [frequency]}}}
    case = Case.from_config(prepare_config(cfg, base_dir="."), "b")
    _, stats = mesh_case(case)
    estimate = resources.p1_dofs_estimate(case)
    assert low * stats["vertices"] <= estimate <= 1.2 * stats["vertices"], (estimate, stats["vertices"])


def test_estimates_count_every_surface_at_its_own_size():
    """A gas body's vertices follow its interior wavelength (1 / 0.22^2 times the water's);
    a nested case counts every surface: two unknowns per vertex of a fluid interface, one of
    a rigid core; its dense operators are three per region over the region's surfaces."""
    medium = {"sound_speed": 1500.0, "density": 1000.0}
    gas = {"kind": "fluid", "density_ratio": 0.0012, "sound_speed_ratio": 0.22}
    flesh = {"kind": "fluid", "density_ratio": 1.04, "sound_speed_ratio": 1.04}
    base = {"geometry": {"kind": "sphere", "radius": 0.05}, "frequencies_hz": [30000.0],
            "mesh": {"max_volume_error": None}}
    one = {**base, "boundary": gas}
    water = {**one, "mesh": {"max_volume_error": None, "resolve_interior": False}}
    ratio = (resources.p1_dofs_estimate(Case.from_dict(one, medium))
             / resources.p1_dofs_estimate(Case.from_dict(water, medium)))
    assert ratio == pytest.approx(1 / 0.22**2, rel=0.01)
    nested = {**base, "boundary": flesh,
              "inside": [{"geometry": {"kind": "sphere", "radius": 0.03}, "boundary": gas,
                          "inside": [{"geometry": {"kind": "sphere", "radius": 0.01},
                                      "boundary": {"kind": "rigid"}}]}]}
    n = resources.surface_vertex_estimates(Case.from_dict(nested, medium))
    assert len(n) == 3 and n[1] == pytest.approx(n[0] * (0.03 / 0.05) ** 2 / 0.22**2, rel=0.02)
    cfg = prepare_config({"medium": medium, "run": ["b"], "cases": {"b": nested}})
    est = resources.case_estimates(Case.from_config(cfg, "b"), gpu=False)
    assert est["unknowns"] == sum(n)
    assert est["system_unknowns"] == 2 * n[0] + 2 * n[1] + n[2]
    outer = resources.case_estimates(Case.from_config(
        prepare_config({"medium": medium, "run": ["b"], "cases": {"b": {
            **base, "boundary": flesh}}}), "b"), gpu=False)
    assert est["solve_host_bytes"] > outer["solve_host_bytes"]


@pytest.mark.parametrize("version, flags", [
    ("mpiexec (Open MPI) 5.0.3\n", ["--bind-to", "none"]),
    ("mpiexec (OpenRTE) 4.1.2\n", ["--bind-to", "none"]),
    ("HYDRA build details:\n    Version: 4.2.0\n", []),
    (None, [])])
def test_the_default_mpiexec_leaves_open_mpi_ranks_unbound(tmp_path, version, flags):
    """Open MPI's mpiexec binds each of two ranks to one core, so the default launcher asks
    it for none; MPICH's Hydra (which does not bind) and a launcher that is not there or
    does not answer --version are named as they are."""
    launcher = tmp_path / "my mpiexec"
    if version is not None:
        launcher.write_text(f"#!/bin/sh\nprintf '{version}'\n")
        launcher.chmod(0o755)
    quoted = f"'{launcher}'"
    assert resources.mpiexec_command(quoted).split(quoted)[1].split() == flags


# -- operator_format auto against the machine's memory ---------------------------------------
H200 = 150.1e9  # bytes CuPy reports for one H200 (139.8 GiB)


def _submarine(default, frequency, **solver):
    cfg = _prepared(default, submarine__frequencies_hz=[frequency],
                    submarine__solver={"operator_format": "auto", **solver})
    return Case.from_config(prepare_config(cfg, base_dir=ROOT), "submarine")


def test_operator_models_lie_a_little_above_the_submarines_measured_bytes(default):
    """K + W of the default submarine at 10 elements per wavelength on one H200 (complex64
    blocks): hmatrix 4.23 / 23.5 / 140.5 GiB and directional 8:10:7 2.21 / 8.81 / 41.53 GiB
    at 1, 2 and 4 kHz (75,650 / 299,154 / 1,196,610 DOFs). The models lie at or above each,
    and within 12% of the 4 kHz size's: n log2 n alone put the H-matrix's at 118 GiB, which
    fits the card it did not fit."""
    area = _submarine(default, 1000.0).bodies[0].geometry.area()
    gib = 2**30
    for f, n, hmatrix, directional in ((1000.0, 75_650, 4.23, 2.21),
                                       (2000.0, 299_154, 23.5, 8.81),
                                       (4000.0, 1_196_610, 140.5, 41.53)):
        a = area * (f / 1500.0) ** 2
        h = resources.hmatrix_operator_bytes(n, a, 2, 8) / gib
        d = resources.directional_operator_bytes(n, a, 2, 8) / gib
        assert hmatrix <= h and directional <= d <= 1.12 * directional, (f, h, d)
    assert h <= 1.12 * hmatrix
    # below the square wavelengths the directional model was measured on: the H-matrix's
    assert resources.directional_operator_bytes(10**6, 100.0) == \
        resources.hmatrix_operator_bytes(10**6, 100.0, itemsize=8)


def test_directional_products_need_a_column_of_expansions(default):
    """The directional solve's estimate holds its products' expansions beside the operators:
    one column took 2.68 and 12.98 GiB (FarField.work_bytes_per_column, the hypersingular on
    the submarine at 2 and 4 kHz). The model lies at or above each, within 15%, and the
    solve's estimate holds it (without it the 4 kHz solve's estimate is 13 GiB short)."""
    area = _submarine(default, 1000.0).bodies[0].geometry.area()
    for f, n, measured in ((2000.0, 299_154, 2.68), (4000.0, 1_179_847, 12.98)):
        model = resources.directional_work_bytes(n, area * (f / 1500.0) ** 2) / 2**30
        assert measured <= model <= 1.15 * measured, (f, model)
    assert resources.directional_work_bytes(10**6, 100.0) == 0.0
    case = _submarine(default, 4000.0)
    est = resources.case_estimates(case, True, H200)
    assert est["format"] == "directional"
    n = est["unknowns"]
    wavelengths = resources.square_wavelengths(case)
    operators = resources.directional_operator_bytes(n, wavelengths, 2, 8)
    work = resources.directional_work_bytes(n, wavelengths)
    assert est["solve_gpu_bytes"] >= operators + work


@pytest.mark.parametrize("frequency, memory, gpu, expected", [
    (1000.0, H200, True, "hmatrix"),        # 6.5 GB: fits
    (2000.0, H200, True, "hmatrix"),        # 29 GB: fits, and is faster
    (4000.0, H200, True, "directional"),    # 160 GB does not fit, about 49 GB does
    (4000.0, 40e9, True, "hmatrix"),        # neither fits: the pre-flight decides
    (2000.0, 20e9, True, "directional"),    # 29 GB does not fit, 12 GB does
    (2000.0, 20e9, False, "hmatrix"),       # a CPU solve: host memory, 43 GB: neither fits
    (2000.0, 35e9, False, "directional"),   # host: 43 GB does not fit, 26 GB does
    (2000.0, 64e9, False, "hmatrix"),
    (4000.0, None, True, "hmatrix"),        # the machine not known: by size alone
])
def test_auto_takes_hmatrix_where_it_fits_else_directional_where_that_fits(
        default, frequency, memory, gpu, expected):
    est = resources.case_estimates(_submarine(default, frequency), gpu, memory)
    assert est["format"] == expected, est["format_reason"]
    assert est["format_reason"].startswith("auto: ")
    if memory is not None:
        need = est["solve_gpu_bytes"] if gpu else est["solve_host_bytes"]
        assert (need <= memory) == (expected == "directional" or "fits the" in
                                    est["format_reason"])


def test_auto_is_hmatrix_on_several_ranks_and_dense_when_small(default):
    case = _submarine(default, 4000.0, ranks=2)
    est = resources.case_estimates(case, True, H200)
    assert est["format"] == "hmatrix" and "2 ranks" in est["format_reason"]
    small = _submarine(default, 100.0)  # ~1,000 DOFs, under dense_below = 6000
    est = resources.case_estimates(small, True, 1.0)
    assert est["format"] == "dense" and "dense_below" in est["format_reason"]
    forced = _submarine(default, 4000.0, operator_format="hmatrix")
    assert resources.case_estimates(forced, True, H200)["format"] == "hmatrix"


def test_format_choice_rule():
    """SolverSettings.format_choice on its own, with the solve's bytes in each format given."""
    from wavescat.configuration.case import SolverSettings

    need = {"hmatrix": 10e9, "directional": 4e9}.__getitem__
    auto = SolverSettings.from_dict({"operator_format": "auto"})
    assert auto.format_for(5999, memory=1.0, need=need) == "dense"
    assert auto.format_for(6000) == "hmatrix"  # no machine: as before
    assert auto.format_for(6000, memory=10e9, need=need) == "hmatrix"
    assert auto.format_for(6000, memory=9e9, need=need) == "directional"
    assert auto.format_for(6000, memory=3e9, need=need) == "hmatrix"
    assert auto.format_for(6000, ranks=2, memory=9e9, need=need) == "hmatrix"
    assert auto.format_for(100, ranks=2) == "hmatrix"
    fmt, why = auto.format_choice(6000, memory=9e9, need=need, where="GPU memory")
    assert why == ("auto: the hmatrix solve (about 10 GB estimated) does not fit the 9 GB of "
                   "GPU memory; the directional one (about 4 GB) fits")
    assert SolverSettings.from_dict({"operator_format": "hmatrix"}).format_for(
        6000, memory=1.0, need=need) == "hmatrix"


def test_preflight_takes_the_format_auto_picks(default, monkeypatch):
    """The check before the run estimates the format auto picks for the machine: the 4 kHz
    submarine on one H200 passes in directional; on a 40 GB card, with 100 GB of host
    memory, neither fits and the hmatrix solve is refused."""
    monkeypatch.setattr(preflight, "gpu_memory_bytes", lambda: H200)
    cfg = _prepared(default, submarine__frequencies_hz=[4000.0],
                    submarine__solver={"operator_format": "auto", "backend": "gpu"})
    cfg["limits"] = {"host_memory_gb": 256}
    preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["submarine"])
    cfg["limits"] = {"host_memory_gb": 100, "gpu_memory_gb": 40}
    with pytest.raises(ConfigError, match=r"the hmatrix solve \(its blocks on the GPU or moved"):
        preflight.check_limits(prepare_config(cfg, base_dir=ROOT), ["submarine"])


def test_the_solve_asks_the_machine_only_where_auto_depends_on_it(default, monkeypatch):
    """solve_format (what `wavescat solve` resolves auto with, solve.driver's choose_format):
    the mesh's DOFs and area at this wavenumber against the memory of this machine's GPU (or
    host), asked only for auto on one rank above dense_below."""
    asked = []
    monkeypatch.setattr(resources, "gpu_memory_bytes", lambda: asked.append("gpu") or H200)
    monkeypatch.setattr(resources, "host_memory_bytes", lambda: asked.append("host") or 128e9)
    cfg = prepare_config(_prepared(default, submarine__solver={"operator_format": "auto"}),
                         base_dir=ROOT)
    from wavescat.configuration.config import solve_case

    case = solve_case(cfg, "submarine")  # as the solve job has it: no frequencies
    k4, area = 2 * np.pi * 4000.0 / 1500.0, 1332.8
    assert resources.solve_format(case, 1_196_610, k4, area, True)[0] == "directional"
    assert resources.solve_format(case, 1_196_610, k4 / 2, area, True)[0] == "hmatrix"
    assert asked == ["gpu", "gpu"]
    assert resources.solve_format(case, 1_196_610, k4, area, False)[0] == "directional"
    assert asked[-1] == "host"
    asked.clear()
    assert resources.solve_format(case, 5000, k4, area, True)[0] == "dense"
    assert resources.solve_format(case, 1_196_610, k4, area, True, ranks=2)[0] == "hmatrix"
    assert asked == []
