"""GMRES iterations of the Müller transmission system of a gas body with and without the
block-triangular preconditioner (bem/formulations/muller_preconditioner.py), against frequency.

    # the sphere's exact spectra per degree l (no mesh): modes farther than 0.3 from 1
    PYTHONPATH=src python bench/bench_fluid_preconditioner.py --symbol
    # the Jech et al. gas sphere (radius 1 cm), icosphere meshes, against the exact series
    PYTHONPATH=src python bench/bench_fluid_preconditioner.py --body sphere --level 3 \
        --frequencies 12e3,38e3,70e3,120e3
    # the 10 x 10 x 70 mm gas spheroid, 10 elements per gas wavelength at the top frequency
    PYTHONPATH=src python bench/bench_fluid_preconditioner.py --body spheroid \
        --frequencies 12e3,25e3,38e3 --delta 0,0.025

Gas 1.24 kg/m^3, 345 m/s in sea water 1026.8 kg/m^3, 1477.3 m/s (g = 0.0012, h = 0.2335);
`--delta` the interior absorption, k1 = (omega / c1)(1 + i delta) (0.025: Q about 20).
Prints per frequency and delta: unknowns, iterations without / with the preconditioner,
seconds per iteration, the preconditioner's setup (dense LU of the two diagonal blocks),
and for the undamped sphere the far field's relative error against the series.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

from wavescat.backend import get_backend
from wavescat.bem.formulations.burton_miller import plane_wave_data
from wavescat.bem.formulations.osrc import mass_and_stiffness
from wavescat.bem.formulations.transmission import MullerTransmission
from wavescat.bem.linalg.gmres import gmres
from wavescat.errors import SolverError
from wavescat.solve.driver import boundary_operator

RHO, C = 1026.8, 1477.3
RHO1, C1 = 1.24, 345.0
G, H = RHO1 / RHO, C1 / C
DIRECTION = np.array([0.0, 0.0, 1.0])  # broadside on the spheroid (axis along x)


def directions(angles_deg):
    """Incident directions at these angles from the spheroid's axis (x), in the xz plane."""
    t = np.radians(np.asarray(angles_deg, float))
    return np.stack([np.cos(t), np.zeros_like(t), np.sin(t)], axis=1)


def symbol_table(radius=0.01, frequencies=(12e3, 38e3, 70e3, 120e3, 200e3)):
    """Modes (degrees l, each counted once) of the sphere's Müller system farther than 0.3
    from 1, without preconditioner, with the inverse of A_DD alone, with the block triangle."""
    from wavescat.reference.sphere_eigenvalues import helmholtz_eigenvalues as ev

    print("delta  f_kHz  k1a  | none: spread, min|lam| | A_DD^-1: spread | block_triangular: "
          "spread, max|lam-1|")
    for delta in (0.0, 0.025):
        for f in frequencies:
            k = 2 * math.pi * f / C
            k1 = k / H * (1 + 1j * delta)
            l = np.arange(int(abs(k1) * radius) + 25)
            e0, e1 = ev(l, k, radius), ev(l, k1, radius)
            a = 2 / (1 + G)
            A = np.empty((len(l), 2, 2), complex)
            A[:, 0, 0] = 1 + a * (e1["double_layer"] - G * e0["double_layer"])
            A[:, 0, 1] = a * G * k * (e0["single_layer"] - e1["single_layer"])
            A[:, 1, 0] = a * (e0["hypersingular"] - e1["hypersingular"]) / k
            A[:, 1, 1] = 1 + a * (e0["adjoint_double_layer"] - G * e1["adjoint_double_layer"])
            tri = A.copy()
            tri[:, 0, 1] = 0
            dd = np.zeros_like(A)
            dd[:, 0, 0], dd[:, 1, 1] = A[:, 0, 0], 1
            lam = [np.linalg.eigvals(m) for m in (A, A @ np.linalg.inv(dd),
                                                   A @ np.linalg.inv(tri))]
            spread = [int(np.sum(np.abs(x - 1) > 0.3)) for x in lam]
            print(f"{delta:5.3f} {f / 1e3:6.0f} {k1.real * radius:5.1f} | {spread[0]:3d} "
                  f"{np.abs(lam[0]).min():.2e} | {spread[1]:3d} | {spread[2]:3d} "
                  f"{np.abs(lam[2] - 1).max():.3f}")


def body_mesh(body, top_frequency, per_gas_wavelength, level):
    if body == "sphere":
        from wavescat.geometry.icosphere import icosphere
        from wavescat.geometry.volume import match_volume

        a = 0.01
        return match_volume(icosphere(level, a), 4 / 3 * math.pi * a**3)[0]
    from wavescat.configuration.case import Case
    from wavescat.geometry import mesh_case

    size = C1 / top_frequency / per_gas_wavelength
    case = {"geometry": {"kind": "spheroid", "semi_axes": [0.035, 0.005, 0.005]},
            "boundary": {"kind": "fluid", "density": RHO1, "sound_speed": C1},
            "frequencies_hz": [top_frequency],
            "mesh": {"elements_per_wavelength": 10, "max_element_size": size,
                     "curvature_refinement": 0, "max_volume_error": None,
                     "match_volume": "auto", "band_ratio": 1.5}}
    return mesh_case(Case.from_dict(case, {"density": RHO, "sound_speed": C}))[0]


def assemble(mesh, frequency, delta, fmt, backend, precision="double"):
    """The space, k, the six operators at k and k1, and the seconds they took."""
    from wavescat.bem.discretisation.spaces import p1

    be = get_backend(backend)
    space = p1(mesh)
    k = 2 * math.pi * frequency / C
    k1 = k / H * (1 + 1j * delta)
    t = time.perf_counter()
    ops = {}
    for i, kk in enumerate((k, k1 if delta else k1.real)):
        for sym, name in (("V", "single_layer"), ("K", "double_layer"), ("W", "hypersingular")):
            ops[f"{sym}{i}"] = boundary_operator(name, space, kk, operator_format=fmt,
                                                 backend=be, precision=precision)
    return space, k, ops, time.perf_counter() - t


def run(space, k, ops, preconditioner, backend, maxiter, incident):
    """(solutions, iterations per direction, setup seconds, solve seconds) of the plane
    waves along the rows of `incident`, solved together."""
    be = get_backend(backend)
    mass, _ = mass_and_stiffness(space)
    t = time.perf_counter()
    system = MullerTransmission(ops, mass, k, G, xp=be.xp, preconditioner=preconditioner)
    setup = time.perf_counter() - t
    rhs = system.rhs(*plane_wave_data(space, k, incident))
    t = time.perf_counter()
    res = gmres(system.matvec, rhs, xp=be.xp, tol=1e-5, restart=maxiter, maxiter=maxiter)
    solve = time.perf_counter() - t
    return be.asnumpy(system.solution(res.x)), res.iterations, setup, solve


def sphere_error(space, k, x, backend):
    from wavescat.bem.formulations import FluidMuller, boundary_from
    from wavescat.reference import fluid_sphere

    dirs = np.array([[math.sin(t), 0.0, math.cos(t)] for t in np.linspace(0, math.pi, 37)])
    form = FluidMuller(boundary_from({"kind": "fluid", "density_ratio": G,
                                      "sound_speed_ratio": H}))
    far = np.asarray(get_backend(backend).asnumpy(form.far_field(space, dirs, k, backend)) @ x)
    exact = fluid_sphere.far_field(k, 0.01, DIRECTION, dirs, density_ratio=G,
                                   sound_speed_ratio=H)
    return float(np.linalg.norm(far[:, 0] - exact) / np.linalg.norm(exact))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--symbol", action="store_true", help="the sphere's exact spectra only")
    p.add_argument("--body", choices=("sphere", "spheroid"), default="sphere")
    p.add_argument("--level", type=int, default=3, help="icosphere subdivisions (sphere)")
    p.add_argument("--per-gas-wavelength", type=float, default=10.0,
                   help="elements per gas wavelength at the top frequency (spheroid)")
    p.add_argument("--frequencies", default="12e3,38e3")
    p.add_argument("--delta", default="0", help="interior absorptions, comma-separated")
    p.add_argument("--format", default="dense", choices=("dense", "hmatrix"))
    p.add_argument("--backend", default="cpu")
    p.add_argument("--maxiter", type=int, default=1000)
    p.add_argument("--angles", default="90",
                   help="incidence angles from the spheroid's axis (degrees; 90 broadside)")
    p.add_argument("--precision", default="double", choices=("double", "single"))
    p.add_argument("--save-mesh", help="write the mesh (npz: vertices, triangles) and stop")
    p.add_argument("--mesh", help="read the mesh from such an npz file instead")
    p.add_argument("--only", choices=("none", "block_triangular"), default=None)
    args = p.parse_args(argv)
    if args.symbol:
        symbol_table()
        return
    freqs = [float(f) for f in args.frequencies.split(",")]
    if args.mesh:
        from wavescat.surface import SurfaceMesh

        with np.load(args.mesh) as f:
            mesh = SurfaceMesh(f["vertices"], f["triangles"])
    else:
        mesh = body_mesh(args.body, max(freqs), args.per_gas_wavelength, args.level)
    if args.save_mesh:
        np.savez(args.save_mesh, vertices=mesh.vertices, triangles=mesh.triangles)
        print(f"{args.save_mesh}: {mesh.n_vertices} vertices")
        return
    edge = 1e3 * mesh.edge_lengths.mean()
    print(f"{args.body}: {mesh.n_vertices} vertices ({2 * mesh.n_vertices} unknowns), "
          f"mean edge {edge:.2f} mm, {args.format} on {args.backend}")
    incident = (DIRECTION[None] if args.body == "sphere"
                else directions([float(a) for a in args.angles.split(",")]))
    print(f"incidence: {args.angles if args.body == 'spheroid' else DIRECTION.tolist()}; "
          "iterations per direction, all directions in one GMRES block; s/it: solve seconds "
          "per iteration of the slowest direction")
    print("f_kHz  delta  unknowns  per_gas_wl | preconditioner     iterations  s/it  "
          "setup_s  solve_s  assembly_s  error")
    pcs = [args.only] if args.only else ["none", "block_triangular"]
    for f in freqs:
        for delta in (float(d) for d in args.delta.split(",")):
            space, k, ops, asm = assemble(mesh, f, delta, args.format, args.backend,
                                          args.precision)
            for pc in pcs:
                try:
                    x, its, setup, solve = run(space, k, ops, pc, args.backend, args.maxiter,
                                               incident)
                except SolverError as exc:
                    print(f"{f / 1e3:6.1f} {delta:6.3f} {2 * space.n_dofs:8d} | {pc}: {exc}",
                          flush=True)
                    continue
                it = int(its.max())
                err = (sphere_error(space, k, x, args.backend)
                       if args.body == "sphere" and delta == 0 else float("nan"))
                print(f"{f / 1e3:6.1f} {delta:6.3f} {2 * space.n_dofs:8d} "
                      f"{C1 / f * 1e3 / edge:8.1f}    | {pc:18s} {'/'.join(map(str, its)):>10s} "
                      f"{solve / max(it, 1):7.3f} {setup:7.1f} {solve:8.1f} {asm:8.1f}  "
                      f"{err:.2e}", flush=True)

if __name__ == "__main__":
    main()
