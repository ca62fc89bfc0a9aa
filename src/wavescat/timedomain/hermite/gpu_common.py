"""What the CUDA forms of the Hermite half step share: the 1D operator in derivative form, the
generated statements of one 1D interpolation, the rendering of their .cu templates, and
compilation."""
from __future__ import annotations

import functools
import math
import re
from pathlib import Path

import numpy as np

from .interpolation import hermite_matrix_1d


def interpolation_operator(m: int) -> tuple[np.ndarray, np.ndarray]:
    """(H~ restricted to the left vertex, 1/j!) for the kernels.

    The kernels hold coefficients in derivative form c~_j = j! b_j (per axis), where
    d/dz is a plain index shift and the Taylor stages need no (j+1) factors; so
    H~ = diag(j!) H, and the centre data is c~ / (j0! j1! j2!). By the reflection
    z -> -z, H~[j, right k] = +-(-1)^k H~[j, left k] (+ for even j), so each output
    needs only the m+1 sums L_k +- (-1)^k R_k: half the multiplications.
    """
    n, m1 = 2 * m + 2, m + 1
    fact = np.array([math.factorial(j) for j in range(n)], dtype=float)
    ht = fact[:, None] * hermite_matrix_1d(m)
    parity = np.array([[(1 if j % 2 == 0 else -1) * (-1) ** k for k in range(m1)] for j in range(n)])
    assert np.allclose(ht[:, m1:], parity * ht[:, :m1], atol=1e-12 * np.abs(ht).max())
    return ht[:, :m1].copy(), 1.0 / fact


def interpolation_statements(m: int, at) -> list[str]:
    """Statements of one 1D interpolation in place, y_j = sum_k H~[j, k] (E|O)_k with the even
    and odd sums E_k = L_k +- R_k, O_k = L_k -+ R_k; at(p) names the value at index p of the
    line (p = a (m+1) + k: vertex a, derivative k). L(x) marks a literal, the operator's zeros
    are dropped."""
    n, m1 = 2 * m + 2, m + 1
    hleft, _ = interpolation_operator(m)
    body = []
    for k in range(m1):
        plus, minus = ("+", "-") if k % 2 == 0 else ("-", "+")
        body.append(f"e{k} = {at(k)} {plus} {at(m1 + k)}")
        body.append(f"o{k} = {at(k)} {minus} {at(m1 + k)}")
    for j in range(n):
        terms = [f"L({float(hleft[j, k])!r}) * {'e' if j % 2 == 0 else 'o'}{k}"
                 for k in range(m1) if hleft[j, k] != 0.0]
        body.append(f"{at(j)} = " + (" + ".join(terms) if terms else "L(0.0)"))
    return body


def single(dtype) -> bool:
    return np.dtype(dtype) == np.float32


def literal(x, dtype) -> str:
    """x as a C literal of the kernel's precision (repr: the double exactly)."""
    return f"{float(x)!r}f" if single(dtype) else f"{float(x)!r}"


def with_literals(lines, dtype) -> list[str]:
    """Generated statements with each L(x) written as a literal of the precision."""
    return [re.sub(r"\bL\(([^)]*)\)", lambda mt: literal(mt.group(1), dtype), ln) for ln in lines]


#: a template's placeholder; CUDA's own names (__global__, __ldg, ...) are lower case
PLACEHOLDER = re.compile(r"__[A-Z][A-Z0-9_]*__")


@functools.lru_cache(maxsize=None)
def template(name: str) -> str:
    """The .cu template `name` beside this module, less its leading /* */ comment (which
    documents the template, not the kernel)."""
    text = Path(__file__).with_name(name).read_text()
    return text[text.index("*/\n") + 3:]


def render(name: str, dtype, defines: dict, **parts) -> str:
    """CUDA source of template `name` after `typedef <real> T;` and the #defines. Each part fills
    its __KEY__: a string in place; a list of statements replaces the line holding only the
    token, one statement per line at that line's indentation."""
    text = template(name)
    for key, value in parts.items():
        token = f"__{key}__"
        if token not in text:
            raise ValueError(f"{name} has no {token}")
        if isinstance(value, str):
            text = text.replace(token, value)
        else:
            text = re.sub(rf"^( *){token}$", lambda mt: "\n".join(mt.group(1) + s for s in value), text,
                          flags=re.M)
    left = sorted(set(PLACEHOLDER.findall(text)))
    if left:
        raise ValueError(f"{name}: placeholders left unfilled: {', '.join(left)}")
    # (the leading newline is the sources' as they were f-strings: unchanged, CuPy's cache still hits)
    return (f"\ntypedef {'float' if single(dtype) else 'double'} T;\n"
            + "".join(f"#define {k} {v}\n" for k, v in defines.items()) + text)


@functools.lru_cache(maxsize=32)
def compile_module(xp, source: str):
    """The compiled RawModule of a generated source (cached: each form compiles once per
    (m, q, system, dtype))."""
    return xp.RawModule(code=source, options=("--use_fast_math",) if "typedef float" in source else ())
