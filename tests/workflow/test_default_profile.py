"""The default profile (profiles/default/config.yaml) loads by itself, and a run killed hard
recovers with exactly the steps README.md gives: `--unlock`, then the same command; outputs
the killed job left half-written are remade thanks to the profile's `rerun-incomplete`."""
import os
import signal
import subprocess
import sys
import time

MY_YAML = """\
run: [pebble]
cases:
  pebble:
    geometry: {kind: sphere, radius: 0.5}
    frequencies_hz: [300]
    receivers: {plane: xz, count: 13}
"""
RUN = ["--cores", "1", "meshes", "--configfile", "my.yaml"]


def test_default_profile_is_used_without_being_named(repo, snakemake):
    out = snakemake("-n", "target_strength")
    assert out.returncode == 0, out.stderr
    assert "Using workflow specific profile profiles/default" in out.stdout + out.stderr
    # printshellcmds of the profile: the dry run shows the command of each job
    assert "-m wavescat mesh" in out.stdout
    bare = snakemake("-n", "target_strength", "--workflow-profile", "none")
    assert bare.returncode == 0 and "-m wavescat mesh" not in bare.stdout


def test_hard_kill_then_unlock_and_rerun(repo, snakemake):
    (repo / "my.yaml").write_text(MY_YAML)
    run = subprocess.Popen([sys.executable, "-m", "snakemake", *RUN], cwd=repo,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    incomplete = repo / ".snakemake" / "incomplete"
    deadline = time.monotonic() + 300
    while not (incomplete.is_dir() and any(incomplete.iterdir())):  # the mesh job has started
        assert run.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline, "the mesh job did not start"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)  # the whole session, as a lost terminal would
    run.wait()
    mesh = repo / "results" / "pebble" / "mesh.msh"
    mesh.parent.mkdir(parents=True, exist_ok=True)
    mesh.write_text("half-written")  # what a killed job may leave behind

    locked = snakemake(*RUN)
    assert locked.returncode != 0
    assert "Directory cannot be locked" in locked.stdout + locked.stderr
    assert "--unlock" in locked.stdout + locked.stderr

    assert snakemake("--unlock").returncode == 0
    # without the profile, Snakemake refuses to go on over the half-written output
    bare = snakemake(*RUN, "--workflow-profile", "none", "-n")
    assert bare.returncode != 0 and "IncompleteFilesException" in bare.stdout + bare.stderr

    again = snakemake(*RUN)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    from wavescat.surface import SurfaceMesh

    assert SurfaceMesh.from_file(mesh).enclosed_volume > 0
