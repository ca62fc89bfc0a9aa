"""Compiled kernels on a fresh machine: what a solve compiles, compiled ahead on every core.

CuPy compiles each CUDA kernel (this package's RawModules and its own elementwise and
reduction kernels) with NVRTC on first use and keeps the binary in its disk cache
(CUPY_CACHE_DIR, default ~/.cupy/kernel_cache); Numba compiles the CPU functions and keeps
them in its own (NUMBA_CACHE_DIR, default beside the sources). A solve meets its kernels one
after another, so on a machine whose caches are empty the first solve of the default
submarine compiled for about 90 s on one core (bench/bench_cold_start.py).

The manifest (kernels.json.gz beside this module) lists what representative GPU solves
compiled: each NVRTC compile's arguments, and each Numba function's signatures. `warm_up`
compiles every entry in a pool of processes, one per core, so a fresh machine pays seconds,
then leaves a marker in CuPy's cache so that it runs once per cache (a cluster shares one
by pointing CUPY_CACHE_DIR and NUMBA_CACHE_DIR at a shared folder). Entries the local CuPy
or code no longer produce only cost their compile; kernels the manifest lacks compile on
first use as before. `WAVESCAT_RECORD_KERNELS=FILE` records a run's compiles into FILE
(`python -m wavescat kernels --record`), which is how the manifest is made.

This leans on two private functions of CuPy's compiler (checked for in `_cupy_compiler`):
where they are missing nothing is recorded or compiled ahead, and solves compile as they go.
"""
from __future__ import annotations

import atexit
import base64
import gzip
import hashlib
import importlib
import json
import logging
import os
import pickle
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

log = logging.getLogger(__name__)

MANIFEST = Path(__file__).with_name("kernels.json.gz")
RECORD_ENV = "WAVESCAT_RECORD_KERNELS"
_done = False  # warm_up ran in this process


def _cupy_compiler():
    """CuPy's compiler module when it has the two functions used here, else None."""
    try:
        from cupy.cuda import compiler  # noqa: PLC0415 - optional dependency
    except Exception:  # noqa: BLE001 - no CuPy, or a broken CUDA install
        return None
    ok = all(callable(getattr(compiler, f, None))
             for f in ("_compile_with_cache_cuda", "_compile_module_with_cache"))
    return compiler if ok else None


# ---------------------------------------------------------------- recording


def start_recording(path: str | os.PathLike) -> bool:
    """Record every NVRTC compile request of this process, and at exit the Numba functions
    this package compiled, into `path` (merged with what it holds). False without CuPy."""
    compiler = _cupy_compiler()
    if compiler is None:
        return False
    seen: dict[str, dict] = {}
    inner = compiler._compile_with_cache_cuda
    local_arch = compiler._get_arch()

    def recording(source, options, arch, extra_source=None, backend="nvrtc",
                  enable_cooperative_groups=False, name_expressions=None, log_stream=None,
                  cache_in_memory=False, jitify=False, to_ltoir=False):
        site, headers = _site(), _header_source()
        entry = {"source": source,
                 # this install's paths (CuPy's include folders) and CuPy's own headers (a
                 # part of the cache key) as placeholders, the replaying machine's put back
                 "options": [o.replace(site, SITE) for o in options],
                 # the recording GPU's own architecture replays as the replaying GPU's
                 "arch": None if arch in (None, local_arch) else arch,
                 "extra_source": HEADERS if extra_source == headers else extra_source,
                 "backend": backend,
                 "cooperative": bool(enable_cooperative_groups),
                 "name_expressions": None if name_expressions is None else list(name_expressions),
                 "jitify": bool(jitify), "to_ltoir": bool(to_ltoir)}
        seen.setdefault(_key(entry), entry)
        return inner(source, options, arch, extra_source, backend, enable_cooperative_groups,
                     name_expressions, log_stream, cache_in_memory, jitify, to_ltoir)

    compiler._compile_with_cache_cuda = recording
    atexit.register(lambda: write_manifest(path, list(seen.values()), _numba_signatures()))
    return True


SITE, HEADERS = "$SITE", "$CUPY_HEADERS"


def _site() -> str:
    """The folder CuPy is installed in (its include options name paths under it)."""
    import cupy  # noqa: PLC0415

    return str(Path(cupy.__file__).resolve().parents[1])


def _header_source() -> str | None:
    """CuPy's headers as its compiles pass them for the cache key (None if unknown)."""
    try:
        from cupy._core import core  # noqa: PLC0415

        return core._get_header_source()
    except Exception:  # noqa: BLE001 - another CuPy: such entries replay as recorded
        return None


def _key(entry: dict) -> str:
    return hashlib.sha1(json.dumps(entry, sort_keys=True).encode()).hexdigest()


def _numba_signatures() -> list[dict]:
    """The compiled signatures of this package's module-level Numba functions (pickled: Numba
    types have no other round trip)."""
    out = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("wavescat") or module is None:
            continue
        for attr, f in list(vars(module).items()):
            sigs = getattr(f, "signatures", None)
            if sigs and getattr(f, "__module__", None) == name and hasattr(f, "compile"):
                out.append({"module": name, "name": attr,
                            "signatures": base64.b64encode(pickle.dumps(list(sigs))).decode()})
    return out


def read_manifest(path: str | os.PathLike = MANIFEST) -> dict:
    """{"nvrtc": [...], "numba": [...]} of a manifest file (gzipped or plain JSON); empty
    lists when there is none."""
    path = Path(path)
    if not path.exists():
        return {"nvrtc": [], "numba": []}
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = json.loads(raw)
    return {"nvrtc": list(data.get("nvrtc", [])), "numba": list(data.get("numba", []))}


def write_manifest(path, nvrtc: list[dict], numba: list[dict]) -> None:
    """Merge these entries into the manifest at `path` (gzipped when it ends in .gz)."""
    path = Path(path)
    old = read_manifest(path)
    merged = {_key(e): e for e in old["nvrtc"] + nvrtc}
    funcs = {(e["module"], e["name"]): e for e in old["numba"] + numba}
    data = json.dumps({"nvrtc": sorted(merged.values(), key=_key),
                       "numba": sorted(funcs.values(), key=lambda e: (e["module"], e["name"]))},
                      indent=0).encode()
    path.write_bytes(gzip.compress(data, mtime=0) if path.suffix == ".gz" else data)


# ---------------------------------------------------------------- compiling ahead


def _compile_nvrtc(entry: dict) -> float:
    t0 = time.perf_counter()
    compiler = _cupy_compiler()
    ne, site = entry["name_expressions"], _site()
    extra = _header_source() if entry["extra_source"] == HEADERS else entry["extra_source"]
    compiler._compile_module_with_cache(
        entry["source"], tuple(o.replace(SITE, site) for o in entry["options"]),
        arch=entry["arch"], extra_source=extra, backend=entry["backend"],
        enable_cooperative_groups=entry["cooperative"],
        name_expressions=None if ne is None else tuple(ne), jitify=entry["jitify"],
        to_ltoir=entry["to_ltoir"])
    return time.perf_counter() - t0


def _compile_numba(entry: dict) -> float:
    t0 = time.perf_counter()
    f = getattr(importlib.import_module(entry["module"]), entry["name"])
    for sig in pickle.loads(base64.b64decode(entry["signatures"])):  # noqa: S301 - our own file
        f.compile(sig)
    return time.perf_counter() - t0


def _compile(task) -> tuple[str, float, str]:
    """One entry in a pool worker: ("nvrtc" | "numba", seconds, error or "")."""
    kind, entry = task
    try:
        return kind, (_compile_nvrtc if kind == "nvrtc" else _compile_numba)(entry), ""
    except Exception as exc:  # noqa: BLE001 - a stale entry: the solve compiles what it needs
        return kind, 0.0, f"{type(exc).__name__}: {exc}"


def _marker(manifest: dict) -> Path | None:
    """The file that says this manifest was compiled into this CuPy cache (None: no CuPy)."""
    compiler = _cupy_compiler()
    if compiler is None:
        return None
    import cupy  # noqa: PLC0415

    digest = hashlib.sha1(json.dumps([sorted(_key(e) for e in manifest["nvrtc"]),
                                      [(e["module"], e["name"], e["signatures"])
                                       for e in manifest["numba"]],
                                      cupy.__version__, compiler._get_arch(),
                                      os.environ.get("NUMBA_CACHE_DIR", "")]).encode())
    cache = Path(os.environ.get("CUPY_CACHE_DIR", Path.home() / ".cupy" / "kernel_cache"))
    return cache / f"wavescat-warm-{digest.hexdigest()[:16]}"


def workers() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def warm_up(manifest_path=MANIFEST, processes: int | None = None, force: bool = False) -> dict:
    """Compile the manifest's kernels into the caches on `processes` (default: every core
    of this process); once per cache unless `force`. Returns what was done: entries,
    seconds (wall, and the compiles' sum), failures."""
    global _done
    manifest = read_manifest(manifest_path)
    marker = _marker(manifest)
    tasks = [("nvrtc", e) for e in manifest["nvrtc"]] + [("numba", e) for e in manifest["numba"]]
    if marker is None or not tasks or (not force and (_done or marker.exists())):
        return {"entries": 0, "wall_s": 0.0, "compile_s": 0.0, "failed": []}
    t0 = time.perf_counter()
    n = min(processes or workers(), len(tasks))
    # the slow ones first (Numba's functions, then the longest sources) so that none is left
    # alone at the end; spawned workers: CUDA does not survive a fork
    tasks.sort(key=lambda t: (t[0] != "numba", -len(t[1].get("source", ""))))
    with ProcessPoolExecutor(n, mp_context=get_context("spawn")) as pool:
        done = list(pool.map(_compile, tasks, chunksize=1))
    failed = [err for _, _, err in done if err]
    report = {"entries": len(tasks), "processes": n, "wall_s": time.perf_counter() - t0,
              "compile_s": sum(s for _, s, _ in done), "failed": failed}
    if failed:
        log.info("kernel warm-up: %d of %d entries did not compile (compiled on use "
                 "instead); first: %s", len(failed), len(tasks), failed[0])
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()
    _done = True
    log.info("kernel warm-up: %d kernels and functions compiled ahead in %.1f s on %d "
             "processes (%.1f s of compiling)", len(tasks), report["wall_s"], n,
             report["compile_s"])
    return report
