"""Every generated CUDA source compiles for sm_90 (H100/H200) with nvcc, when it is on PATH:
the surface/update module and the default volume kernel of N = 1..6, the volume variants of
conftest.VOLUME_VARIANTS, in fp32 and fp64 (CuPy compiles the same text with NVRTC on the
device). WAVESCAT_NVCC_ALL=1 adds every variant `bench/tune_dg.py` tries from the defaults.
Sources compile in batches of one translation unit each; a batch that fails compiles its
sources one by one, and those that fail alone are the test's failures.
"""
import concurrent.futures
import os
import re
import shutil
import subprocess

import numpy as np
import pytest

from wavescat.timedomain.dg.kernel_source import surface_source, volume_source
from wavescat.timedomain.dg.layout import default_elements_per_block
from wavescat.timedomain.dg.tuning import default_volume_tuning
from wavescat.timedomain.dg.reference import reference_tetrahedron

from ...cuda_emulation import kernels
from .test_tuning import tune_dg

NVCC = shutil.which("nvcc")
pytestmark = pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
# Sources per nvcc run: every run parses the CUDA headers anew (1.5 s for an empty kernel),
# a source itself from 0.3 s to 30 s (small batches share the long ones out over the threads).
BATCH = 6


def sources(dtype, variants, tuner):
    for order in range(1, 7):
        ref = reference_tetrahedron(order)
        npn, itemsize = ref.n_nodes, np.dtype(dtype).itemsize
        kbs = default_elements_per_block(max(npn, 4 * ref.n_face_nodes))
        for media in (False, True):
            yield f"N{order} surface{' media' if media else ''}", surface_source(npn, ref.n_face_nodes, ref.face_mask,
                                                                                dtype, kbs, media)
        default = default_volume_tuning(npn, dtype)
        tunings = [default] + [t for o, t in variants if o == order]
        if tuner:
            tunings += [t for stage in tuner.TUNING_STAGES for t in tuner.tuning_candidates(stage, npn, default, itemsize)]
        for tuning in dict.fromkeys(tunings):
            for sponge in (False, True) if tuning == default else (False,):
                yield f"N{order} {tuning!r} sponge={sponge}", volume_source(npn, dtype, tuning, sponge)


@pytest.mark.parametrize("precision", ["single", "double"])
def test_generated_sources_compile_for_sm90(precision, volume_variants, tmp_path, monkeypatch):
    dtype = np.float32 if precision == "single" else np.float64
    tuner = tune_dg(monkeypatch) if os.environ.get("WAVESCAT_NVCC_ALL") == "1" else None

    def nvcc(name, text):
        path = tmp_path / f"{name}.cu"
        path.write_text(text)
        r = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "-cubin", "-o", os.devnull, str(path)],
                           capture_output=True, text=True)
        return r.returncode, r.stderr[-2000:]

    def compile_batch(item):
        """The failures among a batch: none if it compiles as one unit, else those of its
        sources compiled alone (one unit may fail where each alone would not)."""
        b, batch = item
        if nvcc(f"b{b}", "".join(together(i, src) for i, (_, src) in batch))[0] == 0:
            return []
        alone = [(name, *nvcc(f"k{i}", src)) for i, (name, src) in batch]
        return [f"{name}: {err}" for name, rc, err in alone if rc]

    items = list(enumerate(sources(dtype, volume_variants, tuner)))
    batches = list(enumerate(items[i:i + BATCH] for i in range(0, len(items), BATCH)))
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        failed = [f for batch in pool.map(compile_batch, batches) for f in batch]
    assert not failed, "\n".join(failed)


def together(i, source):
    """A source ready to share a translation unit: in its own namespace, its extern "C"
    kernels renamed, and its macros (renames included) undefined after it."""
    names = list(kernels(source))
    macros = sorted(set(re.findall(r"#define (\w+)", source)) | set(names))
    renames = "".join(f"#define {k} u{i}_{k}\n" for k in names)
    return f"{renames}namespace u{i} {{\n{source}\n}}\n" + "".join(f"#undef {m}\n" for m in macros)
