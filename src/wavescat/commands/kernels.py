"""`wavescat kernels`: compile the GPU solves' kernels ahead, on every core (kernel_cache.py).

A solve on the GPU does this by itself the first time it runs with a cache (the marker in
CuPy's cache says it was done); this command does it beforehand, e.g. once for a cluster
whose nodes share CUPY_CACHE_DIR and NUMBA_CACHE_DIR. The manifest is made by runs under
WAVESCAT_RECORD_KERNELS=FILE (kernel_cache.start_recording).
"""
from __future__ import annotations

import json
import sys

from .. import kernel_cache
from ..errors import BackendError


def register(sub) -> None:
    p = sub.add_parser("kernels", help="compile the GPU solves' kernels ahead (once per cache)")
    p.add_argument("--manifest", default=str(kernel_cache.MANIFEST),
                   help="the manifest of kernels to compile (default: the package's)")
    p.add_argument("--processes", type=int, default=None, help="default: every core")
    p.add_argument("--force", action="store_true", help="compile even if done for this cache")
    p.set_defaults(func=run)


def run(args) -> int:
    if args.processes is not None and args.processes < 1:
        raise BackendError(f"--processes = {args.processes}: must be at least 1")
    if kernel_cache._cupy_compiler() is None:  # nothing to do, which is not an error
        print("wavescat kernels: nothing compiled: CuPy (with its compiler) is not importable "
              "here, and the kernels are the GPU's (pip install -e '.[gpu]' on a GPU machine)",
              file=sys.stderr)
        return 0
    report = kernel_cache.warm_up(args.manifest, args.processes, force=args.force)
    print(json.dumps(report, indent=1))
    return 0
