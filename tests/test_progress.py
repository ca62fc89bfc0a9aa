"""Long steps report progress in the job log (a line per refresh with rate and ETA)."""
import numpy as np

from wavescat.bem.linalg.gmres import gmres
from wavescat.defaults import GMRES
from wavescat.progress import progress


def test_slow_step_leaves_lines_with_rate_and_quick_step_none(monkeypatch, capsys):
    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0")
    bar = progress(3, "slow step", "it")
    for _ in range(3):
        bar.update(1)
    bar.close()
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) >= 2 and all(line.startswith("slow step") for line in lines)
    assert "3/3" in lines[-1] and "it/s" in lines[-1] and "\r" not in "".join(lines)

    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "60")
    bar = progress(3, "quick step", "it")
    bar.update(3)
    bar.close()
    assert capsys.readouterr().err == ""


def test_gmres_reports_iterations_and_residual(monkeypatch, capsys):
    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0")
    A = np.diag(np.linspace(1.0, 3.0, 40)) + 0.1 * np.random.default_rng(0).standard_normal((40, 40))
    res = gmres(lambda X: A @ X, np.ones(40), tol=1e-8)
    err = capsys.readouterr().err
    assert f"{res.iterations[0]}/{GMRES['maxiter']}" in err and "residual" in err


def test_progress_can_be_silenced(monkeypatch, capsys):
    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0")
    monkeypatch.setenv("WAVESCAT_PROGRESS", "0")
    bar = progress(2, "silent", "it")
    bar.update(2)
    bar.close()
    assert capsys.readouterr().err == ""


def test_verbose_meshing_prints_gmsh_progress(capfd):
    from wavescat.configuration.case import Case
    from wavescat.geometry import mesh_case

    case = {"geometry": {"kind": "sphere", "radius": 1.0}, "frequencies_hz": [300.0],
            "mesh": {"elements_per_wavelength": 6}}
    mesh_case(Case.from_dict(case, {"sound_speed": 1500.0}), verbose=True)
    out = capfd.readouterr().out
    assert "Meshing 2D" in out and "Done meshing 2D" in out


def test_cold_kernel_cache_is_announced_once_and_warm_cache_not(tmp_path):
    """Numba compiles on a cache miss only: the first run says so once, the next is silent."""
    import os
    import subprocess
    import sys

    script = (
        "import logging, sys\n"
        "logging.basicConfig(level=logging.INFO, stream=sys.stderr, format='%(message)s')\n"
        "from wavescat.progress import announce_compilation\n"
        "announce_compilation(logging.getLogger('wavescat.solve'))\n"
        "announce_compilation(logging.getLogger('wavescat.solve'))\n"
        "from wavescat.bem.kernels.green import kernel, sincos\n"
        "sincos(0.3); kernel(0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 0.0)\n")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                           text=True, timeout=600) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[0].stderr
    assert runs[0].stderr.count("compiling CPU kernels (first run only, about a minute)") == 1
    assert "compiling" not in runs[1].stderr
def test_a_bar_that_does_not_advance_still_reports(monkeypatch, capsys):
    """Numba compiling inside the first step (a minute or more on a busy machine) must not
    leave the log silent: the heartbeat redraws the open bar every interval."""
    import time

    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0.5")  # the heartbeat's own tick
    with progress(3, "first step compiles", "steps") as bar:
        time.sleep(2.5)
        bar.update(3)
    lines = capsys.readouterr().err.splitlines()
    waiting = [line for line in lines if line.startswith("first step compiles:   0%")]
    assert len(waiting) >= 2 and "0/3" in waiting[0]
    assert "3/3" in lines[-1]


def test_a_job_outside_any_bar_still_reports(monkeypatch, capsys):
    """Where no stage has a bar open (imports, compiling before the first bar), the job
    itself is the bar the heartbeat redraws."""
    import time

    from wavescat.cli import main
    from wavescat.commands import dg

    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0.5")
    monkeypatch.setattr(dg, "verify_dg", lambda args: time.sleep(2.5))
    assert main(["verify-dg", "--csv", "a.csv", "--plot", "a.png"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len([line for line in lines if line.startswith("wavescat verify-dg: running for 00:0")]) >= 2


def test_nested_bars_leave_plain_lines(monkeypatch, capsys):
    """A study's bar around each run's bar: the log gets lines, never cursor movements."""
    monkeypatch.setenv("WAVESCAT_PROGRESS_INTERVAL", "0")
    with progress(2, "study", "runs") as outer:
        for _ in range(2):
            with progress(2, "run", "steps") as inner:
                inner.update(2)
            outer.update(1)
    err = capsys.readouterr().err
    assert "\x1b" not in err and all(line.startswith(("study", "run")) for line in err.splitlines())
