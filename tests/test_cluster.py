"""Cluster profiles: which jobs ask for a GPU and which partition each goes to (dry runs under
the profiles), and a real run through profiles/slurm where a SLURM controller answers."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile")]

SPHERE = {"geometry": {"kind": "sphere", "radius": 0.3}, "frequencies_hz": [400.0],
          "receivers": {"plane": "xz", "count": 37},
          "mesh": {"elements_per_wavelength": 8, "max_element_size": 0.12}}


def backends_config(**cluster):
    """Three small spheres solved on the CPU, on the GPU and on `auto`."""
    cases = {f"on_{b}": {**SPHERE, "solver": {"backend": b}} for b in ("cpu", "gpu", "auto")}
    return {"run": list(cases), "cases": cases, **({"cluster": cluster} if cluster else {})}


def dry_run_jobs(tmp_path, profile, config, *targets, env=None, commands=False):
    """(rule, wildcards, resources) of every job of a dry run under `profile` (with
    `commands`, and the job's shell command)."""
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(config))
    out = subprocess.run(SNAKEMAKE + ["-n", "--profile", str(ROOT / "profiles" / profile),
                                      "--configfile=" + str(tmp_path / "cfg.yaml"),
                                      "--cores", "2", "--directory", str(tmp_path),
                                      *(targets or ["target_strength"])],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    jobs = []
    for block in re.findall(r"^rule (\w+):\n(.*?)(?:\n\n|\Z)", out.stdout, re.M | re.S):
        rule, body = block
        fields = dict(re.findall(r"^\s+(\w+): (.*)$", body, re.M))
        wildcards = dict(kv.split("=", 1) for kv in fields.get("wildcards", "").split(", ") if kv)
        resources = dict(kv.split("=", 1) for kv in fields.get("resources", "").split(", ") if kv)
        command = re.search(r"^Shell command: (.*)$", body, re.M)
        jobs.append((rule, wildcards, resources)
                    + ((command.group(1) if command else None,) if commands else ()))
    return jobs


def solves(jobs):
    return {w["case"]: r for rule, w, r in jobs if rule == "solve"}


def test_without_gpu_nodes_every_job_stays_on_the_profile_partition(tmp_path):
    """Default `cluster`: `auto` solves ask for no GPU, and no solve leaves the CPU partition."""
    jobs = dry_run_jobs(tmp_path, "slurm", backends_config())
    by_case = solves(jobs)
    assert {c: r["gpu"] for c, r in by_case.items()} == {"on_cpu": "0", "on_gpu": "1", "on_auto": "0"}
    # without `cluster.partitions` every job, solves included, takes the profile's partition
    partitions = {r.get("slurm_partition") for rule, _, r in jobs if rule != "target_strength"}
    assert partitions == {"compute"}


def test_gpu_jobs_and_only_they_go_to_the_gpu_partition(tmp_path):
    cfg = backends_config(gpus=True, partitions={"cpu": "batch", "gpu": "gpuq"})
    jobs = dry_run_jobs(tmp_path, "slurm", cfg)
    by_case = solves(jobs)
    assert {c: (r["gpu"], r["slurm_partition"]) for c, r in by_case.items()} == {
        "on_cpu": ("0", "batch"), "on_gpu": ("1", "gpuq"), "on_auto": ("1", "gpuq")}
    # jobs of rules that never use a GPU keep the profile's partition
    others = {(rule, r["slurm_partition"]) for rule, _, r in jobs
              if rule in ("mesh", "far_field", "reference_farfield")}
    assert {p for _, p in others} == {"compute"} and len({rule for rule, _ in others}) == 3


def test_dg_scatter_asks_for_a_gpu_on_gpu_nodes(tmp_path):
    """The time-domain cross-check follows `verification.backend` the same way."""
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg = {"cluster": {"gpus": True, "partitions": {"cpu": "batch", "gpu": "gpuq"}}}
    case = next(c for c, v in default["cases"].items() if v.get("dg_cross_check"))
    jobs = dry_run_jobs(tmp_path, "slurm", cfg, f"results/{case}/dg/dg_probes.csv")
    (dg,) = [r for rule, _, r in jobs if rule == "dg_scatter"]
    assert (dg["gpu"], dg["slurm_partition"]) == ("1", "gpuq")
    cfg["verification"] = {"backend": "cpu"}
    jobs = dry_run_jobs(tmp_path, "slurm", cfg, f"results/{case}/dg/dg_probes.csv")
    (dg,) = [r for rule, _, r in jobs if rule == "dg_scatter"]
    assert (dg["gpu"], dg["slurm_partition"]) == ("0", "batch")


def test_generic_profile_requests_gpus_of_auto_solves_on_gpu_nodes(tmp_path):
    jobs = dry_run_jobs(tmp_path, "cluster-generic", backends_config(gpus=True))
    assert {c: r["gpu"] for c, r in solves(jobs).items()} == {
        "on_cpu": "0", "on_gpu": "1", "on_auto": "1"}
    text = (ROOT / "profiles" / "cluster-generic" / "config.yaml").read_text()
    # both submit lines (PBS, and LSF commented) carry the GPU request
    assert "ngpus={resources.gpu}" in text and "-gpu num={resources.gpu}" in text


@pytest.mark.parametrize("profile, slurm_job, cluster, launcher", [
    ("default", False, {}, "mpiexec -n 2"), ("slurm", True, {}, "srun --mpi=pmi2 -n 2"),
    ("slurm", True, {"mpi_launcher": "srun --mpi=pmix"}, "srun --mpi=pmix -n 2")])
def test_a_solve_on_several_ranks_starts_through_the_mpi_resource(tmp_path, profile, slurm_job,
                                                                  cluster, launcher):
    """solver.ranks: 2 gives the solve Snakemake's `mpi` and `tasks` resources (the SLURM
    executor submits such a job with --ntasks) and a command started by `mpi -n tasks`:
    mpiexec on a workstation, srun inside a SLURM job, or `cluster.mpi_launcher`; a 1-rank
    solve has neither, and a GPU solve on 2 ranks asks for a GPU per rank."""
    cases = {"single": {**SPHERE, "solver": {"backend": "cpu"}},
             "shared": {**SPHERE, "solver": {"backend": "cpu", "ranks": 2}},
             "gpus": {**SPHERE, "solver": {"backend": "gpu", "ranks": 2}}}
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    if slurm_job:  # what the job step of a SLURM job sees
        env["SLURM_JOB_ID"] = "1"
    jobs = dry_run_jobs(tmp_path, profile, {"run": list(cases), "cases": cases,
                                            "cluster": cluster}, env=env, commands=True)
    by_case = {w["case"]: (r, cmd) for rule, w, r, cmd in jobs if rule == "solve"}
    single, command = by_case["single"]
    assert not {"mpi", "tasks", "cpus_per_task"} & set(single) and single["launch"] == ""
    assert shlex.split(command)[0] == sys.executable
    shared, command = by_case["shared"]
    assert (shared["tasks"], shared["cpus_per_task"], shared["gpu"]) == ("2", "1", "0")
    assert [Path(shared["mpi"].split()[0]).name] + shared["mpi"].split()[1:] == launcher.split()[:-2]
    launch = shlex.split(command[:command.index(" " + shlex.quote(sys.executable))])
    assert [Path(launch[0]).name] + launch[1:] == launcher.split()
    gpus, _ = by_case["gpus"]
    assert (gpus["tasks"], gpus["gpu"], gpus["tasks_per_gpu"]) == ("2", "2", "1")


@pytest.mark.parametrize("cluster, message", [
    ({"partitions": {"cpu": "batch"}}, "cluster.partitions: missing required key 'gpu'"),
    ({"gpus": "yes"}, "cluster.gpus = 'yes': must be of type boolean"),
    ({"partition": "gpu"}, "cluster: unknown key 'partition'"),
])
def test_bad_cluster_keys_are_named(cluster, message):
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    cfg["cluster"] = cluster
    with pytest.raises(ConfigError, match=re.escape(message)):
        prepare_config(cfg, base_dir=ROOT)


# ----------------------------------------------------------------------------- a real cluster

def _slurm_ready():
    """Why the SLURM run cannot happen here, or None where a controller answers and has the
    profile's partition."""
    if not shutil.which("sbatch"):
        return "no SLURM client (sbatch)"
    if subprocess.run(["scontrol", "ping"], capture_output=True).returncode != 0:
        return "no SLURM controller answers `scontrol ping`"
    profile = yaml.safe_load((ROOT / "profiles" / "slurm" / "config.yaml").read_text())
    part = profile["default-resources"]["slurm_partition"]
    listed = subprocess.run(["sinfo", "-h", "-o", "%R"], capture_output=True, text=True).stdout
    if part not in listed.split():
        return (f"SLURM has no partition {part!r} of profiles/slurm "
                "(profiles/slurm/one-node-cluster.sh sets up one that has)")
    return None


def _slurm_gpu_partition():
    """Why GPU routing cannot be tried here, or None where SLURM has a `gpu` partition whose
    nodes have GPUs (FAKE_GPU=1 profiles/slurm/one-node-cluster.sh setup declares one)."""
    why = _slurm_ready()
    if why:
        return why
    gres = subprocess.run(["sinfo", "-h", "-p", "gpu", "-o", "%G"], capture_output=True,
                          text=True).stdout
    return None if "gpu" in gres else "SLURM has no partition `gpu` with GPUs"


def slurm_run(tmp_path, config, *targets):
    """Run `targets` of `config` through profiles/slurm from a copy of the repository; return
    the copy and the run's jobs as sacct reports them: {(rule, wildcards): row}."""
    work = tmp_path / "repo"
    shutil.copytree(ROOT, work, ignore=shutil.ignore_patterns(
        ".git", ".venv", "results", ".snakemake", "__pycache__", ".pytest_cache"))
    (work / "study.yaml").write_text(yaml.safe_dump(config))
    # threads from the profile's `cores` (a real run without it stopped at the first solve),
    # capped to one CPU of this machine
    run = subprocess.run([sys.executable, "-m", "snakemake", "--profile", "profiles/slurm",
                          "--max-threads", "1", "--configfile=study.yaml",
                          "--slurm-init-seconds-before-status-checks", "5", *targets],
                         cwd=work, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    ids = re.findall(r"Job \d+ has been submitted with SLURM jobid (\d+)", run.stdout + run.stderr)
    assert ids, run.stderr[-3000:]
    sacct = subprocess.run(["sacct", "-X", "-P", "-n", "-j", ",".join(ids), "--format="
                            "JobID,Partition,State,ExitCode,WorkDir,AllocTRES,Comment"],
                           capture_output=True, text=True, check=True).stdout
    rows = [dict(zip(["id", "partition", "state", "exit", "workdir", "tres", "comment"],
                     line.split("|"))) for line in sacct.splitlines()]
    assert len(rows) == len(ids)
    assert {Path(r["workdir"]).resolve() for r in rows} == {work.resolve()}
    jobs = {}
    for r in rows:
        rule, wildcards = re.match(r"rule_(\w+?)(?:_wildcards_(.*))?$", r["comment"]).groups()
        jobs[rule, wildcards] = r
    return work, jobs


@pytest.mark.skipif(_slurm_ready() is not None, reason=str(_slurm_ready()))
def test_sphere_study_through_the_slurm_profile(tmp_path):
    """A small sphere study submitted through profiles/slurm: every rule's job runs as a SLURM
    job in the profile's partition and completes, and the far field is the exact one."""
    config = {"run": ["pebble"], "cases": {"pebble": {**SPHERE, "solver": {"backend": "cpu"}}}}
    work, jobs = slurm_run(tmp_path, config, "target_strength", "verify_bem")
    errors = json.loads((work / "results" / "pebble" / "bem_vs_exact.json").read_text())
    assert errors["relative_l2_error"] < 0.05
    assert {rule for rule, _ in jobs} == {"mesh", "solve", "reference_farfield", "far_field",
                                          "bem_vs_exact"}
    assert {(r["partition"], r["state"], r["exit"]) for r in jobs.values()} == {
        ("compute", "COMPLETED", "0:0")}


@pytest.mark.skipif(_slurm_gpu_partition() is not None, reason=str(_slurm_gpu_partition()))
def test_only_gpu_solves_reach_the_gpu_partition(tmp_path):
    """On GPU nodes an `auto` solve is given a GPU in the GPU partition; a CPU solve and every
    other job stay in the CPU partition without one."""
    cases = {f"on_{b}": {**SPHERE, "solver": {"backend": b}} for b in ("cpu", "auto")}
    config = {"run": list(cases), "cases": cases,
              "cluster": {"gpus": True, "partitions": {"cpu": "compute", "gpu": "gpu"}}}
    work, jobs = slurm_run(tmp_path, config, "target_strength")
    assert {r["state"] for r in jobs.values()} == {"COMPLETED"}
    placed = {key: (r["partition"], "gres/gpu=1" in r["tres"]) for key, r in jobs.items()}
    assert placed.pop(("solve", "on_auto_000")) == ("gpu", True)
    # mesh, exact reference, solve and far field of each sphere but the GPU solve
    assert len(placed) == 7 and set(placed.values()) == {("compute", False)}
    for case in cases:
        assert (work / "results" / case / "farfield.csv").exists()


@pytest.mark.skipif(_slurm_ready() is not None, reason=str(_slurm_ready()))
def test_a_solve_on_two_ranks_through_the_slurm_profile(tmp_path):
    """solver.ranks: 2 through profiles/slurm: the solve is one SLURM job of two tasks whose
    step srun starts (the SLURM executor's MPI support), solving on two MPI ranks, and its far
    field is the exact one."""
    import h5py

    solver = {"backend": "cpu", "ranks": 2, "hmatrix": {"leaf_size": 16}}
    config = {"run": ["pebble"], "cases": {"pebble": {**SPHERE, "solver": solver}}}
    work, jobs = slurm_run(tmp_path, config, "target_strength", "verify_bem")
    solve = jobs["solve", "pebble_000"]
    assert (solve["state"], solve["exit"]) == ("COMPLETED", "0:0") and "cpu=2" in solve["tres"]
    steps = subprocess.run(["sacct", "-P", "-n", "-j", solve["id"], "--format=JobID,NTasks"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert f"{solve['id']}.0|2" in steps  # srun's step: two tasks
    with h5py.File(work / "results" / "pebble" / "solutions" / "f000.h5") as f:
        assert json.loads(f.attrs["parallel"])["ranks"] == 2
    errors = json.loads((work / "results" / "pebble" / "bem_vs_exact.json").read_text())
    assert errors["relative_l2_error"] < 0.05
