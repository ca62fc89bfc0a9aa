"""Which volume-kernel variant a device runs: the tuning tables (tuning.json, package data, made
by bench/tune_dg.py) keyed by compute capability, layout and precision, and the rules for a
caller's options."""
from __future__ import annotations

import functools
import json
from importlib import resources

import numpy as np

from .layout import VolumeTuning, default_elements_per_block, volume_layout


@functools.lru_cache(maxsize=None)
def tuning_tables() -> tuple[dict, ...]:
    """The tables of tuning.json in order of preference, each {"layout", "min_compute_capability",
    "measured_on", "single": {Np: VolumeTuning}, "double": {...}}."""
    data = json.loads(resources.files(__package__).joinpath("tuning.json").read_text())
    return tuple({**t, **{p: {int(n): VolumeTuning(**f) for n, f in t[p].items()} for p in ("single", "double")}}
                 for t in data["tables"])


def volume_table(layout: str, dtype, compute_capability: int = 90) -> dict[int, VolumeTuning]:
    """{Np: variant} of the `layout` ("tensor" or "rows") table for the precision of dtype on a
    device of this compute capability (empty where none applies)."""
    precision = "double" if np.dtype(dtype).itemsize == 8 else "single"
    return next((t[precision] for t in tuning_tables()
                 if t["layout"] == layout and t["min_compute_capability"] <= compute_capability), {})


def default_volume_tuning(n_nodes: int, dtype, compute_capability: int = 90) -> VolumeTuning:
    """The tables' variant for Np on the device (the first table it qualifies for that has Np),
    with fewer rows per block where it does not fit (fp64 staging needs twice the shared memory
    of fp32)."""
    itemsize = np.dtype(dtype).itemsize
    precision = "double" if itemsize == 8 else "single"
    tuning = next((t[precision][n_nodes] for t in tuning_tables()
                   if t["min_compute_capability"] <= compute_capability and n_nodes in t[precision]),
                  None) or VolumeTuning(default_elements_per_block(n_nodes))
    while tuning.kb_volume > 1:
        try:
            volume_layout(n_nodes, tuning, itemsize)
            break
        except ValueError:
            tuning = tuning._replace(kb_volume=tuning.kb_volume // 2)
    return tuning


def resolve_volume_tuning(n_nodes: int, dtype, compute_capability: int, **options) -> VolumeTuning:
    """The variant GpuKernels compiles: with no options the default (`default_volume_tuning`);
    options (VolumeTuning fields; None: not given) change a row-layout default unless they say
    tensor=True, then a tensor-core one (the table's, or one warp per element group)."""
    given = {k: v for k, v in options.items() if v is not None}
    if not given:
        return default_volume_tuning(n_nodes, dtype, compute_capability)
    if given.get("tensor"):
        base = volume_table("tensor", dtype).get(n_nodes, VolumeTuning(1, tensor=True))
    else:
        base = default_volume_tuning(n_nodes, dtype, compute_capability=0)
    return base._replace(**given)
