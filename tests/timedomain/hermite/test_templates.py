"""The .cu templates of the Hermite GPU forms (gpu_*.cu beside their modules) render into
complete CUDA for every variant the solver builds: no placeholder left, brackets balanced,
the form's kernels defined, and the whole set passes g++'s syntax check under the CUDA
emulation's shim. Running the kernels against the Numba half step is test_gpu.py's
(emulated) and test_propagator.py's."""
import itertools
import re
import subprocess
from importlib import resources

import numpy as np
import pytest

from wavescat.timedomain.hermite import acoustics, advection, gpu, gpu_cell, gpu_propagator, gpu_warp
from wavescat.timedomain.hermite.gpu_common import PLACEHOLDER, render

from ...cuda_emulation import SHIM, compiler, kernels, unit

# coupling patterns: full advection, one with a zero velocity component, acoustics
SYSTEMS = {"advection": advection((0.7, -0.4, 0.55)), "advection-2d": advection((1.0, 0.0, 0.5)),
           "acoustics": acoustics(1.5, 1.2)}
KERNELS = {"shared": {"hermite_monolithic", "hermite_interpolate", "hermite_evolve"}, "cell": {"hermite_cell"},
           "warp": {"hermite_warp"}, "propagator": {"hermite_propagator"}}


def _variants() -> dict:
    """id -> (form, source) of the recursion forms for m = 1..4 where they fit (as make_kernels
    allows them), q = 1 and 3(2m+1), both precisions, and of the propagator on its tiles."""
    out = {}
    for (name, system), dtype, m in itertools.product(SYSTEMS.items(), (np.float32, np.float64), range(1, 5)):
        cpl, nf, n = tuple(system.couplings()), system.n_fields, 2 * m + 2
        for q in (1, 3 * (2 * m + 1)):
            key = f"{name}-{np.dtype(dtype).name}-m{m}-q{q}"
            out[f"shared-{key}"] = "shared", gpu.kernel_source(m, q, cpl, nf, dtype)
            out[f"shared-{key}-1cell"] = "shared", gpu.kernel_source(m, q, cpl, nf, dtype, cells=1)
            if nf * n ** 3 <= gpu_cell.MAX_VALUES:
                out[f"cell-{key}"] = "cell", gpu_cell.kernel_source(m, q, cpl, nf, dtype)
            if nf * n ** 2 <= gpu_warp.MAX_VALUES:
                out[f"warp-{key}"] = "warp", gpu_warp.kernel_source(m, q, cpl, nf, dtype)
    for dtype, m in itertools.product((np.float32, np.float64), range(1, 5)):
        for tile in (gpu_propagator.Tile(), gpu_propagator.Tile(16, 2), gpu_propagator.Tile(8, 32)):
            tile = gpu_propagator.fit_tile(m, np.dtype(dtype).itemsize, tile)
            out[f"propagator-{np.dtype(dtype).name}-m{m}-{tile.lanes}x{tile.rows}"] = (
                "propagator", gpu_propagator.kernel_source(m, dtype, tile.lanes, tile.rows))
    return out


VARIANTS = _variants()


def _unbalanced(source: str) -> str | None:
    """The first bracket out of place, with its context, outside comments; None if balanced."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    stack, pairs = [], {")": "(", "]": "[", "}": "{"}
    for i, ch in enumerate(code):
        if ch in "([{":
            stack.append(i)
        elif ch in pairs:
            if not stack or code[stack[-1]] != pairs[ch]:
                return code[max(0, i - 80):i + 1]
            stack.pop()
    return code[stack[-1]:stack[-1] + 80] if stack else None


def test_every_form_and_precision_is_covered():
    forms = {(form, "typedef float T;" in src) for form, src in VARIANTS.values()}
    assert forms == {(form, single) for form in KERNELS for single in (True, False)}


@pytest.mark.parametrize("form, source", VARIANTS.values(), ids=VARIANTS.keys())
def test_template_renders_complete_source(form, source):
    assert not PLACEHOLDER.findall(source)
    assert _unbalanced(source) is None, _unbalanced(source)
    assert set(kernels(source)) == KERNELS[form]
    assert len(re.findall(r"^typedef (float|double) T;$", source, flags=re.M)) == 1


def test_templates_ship_beside_their_modules():
    """Read as package data (pyproject's **/*.cu; tests/test_packaging.py builds the package)."""
    folder = resources.files("wavescat.timedomain.hermite")
    for name in ("gpu_shared.cu", "gpu_cell.cu", "gpu_warp.cu", "gpu_propagator.cu"):
        text = folder.joinpath(name).read_text()
        assert text.startswith("/*") and "__global__" in text


def test_render_refuses_unknown_and_unfilled_placeholders():
    with pytest.raises(ValueError, match="has no __NOPE__"):
        render("gpu_shared.cu", np.float64, {}, RHS=[], NOPE="")
    with pytest.raises(ValueError, match="left unfilled: __RHS__"):
        render("gpu_shared.cu", np.float64, {})


def test_all_variants_pass_gxx_syntax_check(tmp_path):
    """The sources at q = 3(2m+1) in one translation unit after the emulation's shim of the CUDA
    built-ins (test_gpu.py and test_propagator.py compile and run a subset of them)."""
    sources = [src for key, (_, src) in VARIANTS.items() if not re.search(r"-q1\b", key)]
    path = tmp_path / "hermite.cpp"
    path.write_text(SHIM + "".join(unit(f"v{i}", src) for i, src in enumerate(sources)))
    done = subprocess.run([compiler(), "-std=c++20", "-fsyntax-only", "-w", str(path)], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stderr[-4000:]
