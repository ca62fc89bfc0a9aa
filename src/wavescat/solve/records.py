"""The result files of a BEM case, the one module that writes and reads them: one HDF5
solution per frequency, the far-field table farfield.csv of the contract (and
reference_farfield.csv, in the same format) and summary.json.

HDF5 layout (all angles in degrees, complex data as complex128):
  attrs: frequency_hz, wavenumber, sound_speed, formulation, space ("P1"), unknown (what
         surface_pressure holds), boundary (JSON: the case's boundary block,
         bem/formulations/), solver_settings (JSON), operator_format,
         operator_format_reason (why that format: auto's choice), mesh_fingerprint, dofs,
         elements, elements_per_wavelength, backend, device, precision, time_<stage>_s for
         assembly/preconditioner/solve/far_field, warnings (JSON list), parallel (JSON: MPI
         ranks, reductions, each rank's stage times and memory, solve/parallel.py),
         monostatic (bool), wavescat_version
  vertices (nv, 3), triangles (m, 3)                          the mesh the solution lives on
  surface_ids (m,) [nested bodies]     the surface of each triangle (surface.py)
  incident_directions (ni, 3), aspect_deg (ni,) [aspect sweeps]
  surface_pressure (ni, n_unknowns)    the formulation's unknown, P1 coefficients (vertex
                                       values): the total pressure (rigid, impedance) or its
                                       normal derivative (pressure-release); for a fluid body
                                       both scattered traces, p_s then (1/k) dp_s/dn
                                       (attribute boundary_given: the block as written)
  iterations (ni,), residuals (ni,)    GMRES operator applications, final relative residual
  receivers/{theta_deg, phi_deg, directions, angle_deg [plane receivers]}
  far_field (ni, nr)                   F(xhat_r; d_i) in metres
  monostatic_far_field (ni,)           F(-d_i; d_i) [aspect sweeps]
surface/<solution>.vtu (write_surface_vtu), for ParaView: the solution's mesh with the
magnitude and phase of its surface fields per incidence direction.
Every file is written to a temporary name beside the target and moved into place.
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

import h5py
import numpy as np

from .. import __version__
from ..bem.formulations import formulation_of_record
from ..errors import WavescatError
from ..files import atomic_path
from ..problem import farfield
from ..surface import SurfaceMesh

FARFIELD_HEADER = ["frequency_hz", "theta_deg", "phi_deg", "re_F", "im_F", "ts_db"]
STAGES = ("assembly", "preconditioner", "solve", "far_field")


def write_solution(path, result, mesh, case_name: str = "") -> None:
    with atomic_path(path) as tmp, h5py.File(tmp, "w") as f:
        a = f.attrs
        a["case"] = case_name
        a["frequency_hz"] = result.frequency_hz
        a["wavenumber"] = result.wavenumber
        a["sound_speed"] = result.sound_speed
        for key, value in result.formulation.record().items():  # formulation, space, boundary
            a[key] = value
        a["solver_settings"] = json.dumps(result.settings.as_dict(), sort_keys=True)
        a["operator_format"] = result.operator_format
        a["operator_format_reason"] = result.operator_format_reason
        a["mesh_fingerprint"] = result.mesh_fingerprint
        a["dofs"], a["elements"] = result.dofs, result.elements
        a["elements_per_wavelength"] = result.elements_per_wavelength
        a["backend"] = result.backend["backend"]
        a["device"] = result.backend["device"]
        a["backend_reason"] = result.backend.get("reason", "")
        a["precision"] = result.settings.precision
        for stage in STAGES:
            a[f"time_{stage}_s"] = result.timings[stage]
        a["warnings"] = json.dumps(result.warnings)
        a["parallel"] = json.dumps(result.parallel)
        a["monostatic"] = bool(result.incidence.monostatic)
        a["wavescat_version"] = __version__
        f["vertices"], f["triangles"] = mesh.vertices, mesh.triangles
        if mesh.surface_ids is not None:
            f["surface_ids"] = mesh.surface_ids
        f["incident_directions"] = result.incidence.directions
        if result.incidence.aspect_deg is not None:
            f["aspect_deg"] = result.incidence.aspect_deg
            f.attrs["aspect_plane"] = result.incidence.plane
        f["surface_pressure"] = result.surface_pressure.T
        f["iterations"], f["residuals"] = result.iterations, result.residuals
        rec = f.create_group("receivers")
        rec["theta_deg"], rec["phi_deg"] = result.receivers.theta_deg, result.receivers.phi_deg
        rec["directions"] = result.receivers.vectors
        if result.receivers.angle_deg is not None:
            rec["angle_deg"] = result.receivers.angle_deg
            rec.attrs["plane"] = result.receivers.plane
        f["far_field"] = result.far_field.T
        if result.monostatic_far_field is not None:
            f["monostatic_far_field"] = result.monostatic_far_field


def read_solution(path) -> dict:
    """Everything of one HDF5 solution file as plain NumPy arrays and Python values."""
    path = Path(path)
    if not path.is_file():
        raise WavescatError(f"solution file {str(path)!r} does not exist")
    with h5py.File(path, "r") as f:
        out = {key: (v.decode() if isinstance(v, bytes) else v) for key, v in f.attrs.items()}
        for key in ("vertices", "triangles", "surface_ids", "incident_directions", "aspect_deg",
                    "surface_pressure", "iterations", "residuals", "far_field",
                    "monostatic_far_field"):
            if key in f:
                out[key] = f[key][()]
        out["receivers"] = {key: f["receivers"][key][()] for key in f["receivers"]}
        out["receivers"].update(dict(f["receivers"].attrs))
    out["solver_settings"] = json.loads(out["solver_settings"])
    out["warnings"] = json.loads(out["warnings"])
    out["parallel"] = json.loads(out.get("parallel", "{}"))
    out["path"] = str(path)
    return out


def solution_mesh(solution: dict) -> SurfaceMesh:
    """The mesh a solution lives on, with its surfaces."""
    if solution.get("bodies") and "surface_ids" not in solution:
        raise WavescatError(f"{solution.get('path', 'solution')}: a solution of nested bodies "
                            "written before wavescat stored each triangle's surface; delete it "
                            "and run its solve again")
    return SurfaceMesh(solution["vertices"], solution["triangles"],
                       {"source": solution.get("path", "solution")}, solution.get("surface_ids"))


def surface_fields(solution: dict) -> dict:
    """{array name: vertex values (float32)} of one solution for a viewer: for each surface
    field of its formulation (the total pressure; on a pressure-release body, whose pressure
    is zero, its normal derivative) and incidence direction j (the order of
    incident_directions), `abs_<field>_d<j>` (Pa, or Pa/m) and `phase_deg_<field>_d<j>`
    (degrees, exp(-i w t)), for a unit incident wave."""
    mesh = solution_mesh(solution)
    form = formulation_of_record(solution)
    used = np.unique(mesh.triangles)  # the P1 dofs, in vertex order
    k = float(solution["wavenumber"])
    out = {}
    for j, (d, x) in enumerate(zip(np.atleast_2d(solution["incident_directions"]),
                                   np.atleast_2d(solution["surface_pressure"]))):
        incident = np.exp(1j * k * (mesh.vertices[used] @ d))
        for name, values in form.surface_fields(x, incident).items():
            full = np.full(mesh.n_vertices, np.nan, complex)
            full[used] = values
            out[f"abs_{name}_d{j:03d}"] = np.abs(full).astype(np.float32)
            out[f"phase_deg_{name}_d{j:03d}"] = np.degrees(np.angle(full)).astype(np.float32)
    return out


def write_surface_vtu(path, solution: dict) -> None:
    """The solution's mesh with its surface fields (surface_fields) as point data, and the
    surface of each triangle (0: the outer body) as cell data, in VTU through meshio."""
    import meshio

    mesh = solution_mesh(solution)
    surface = np.zeros(mesh.n_triangles, np.int32) if mesh.surface_ids is None \
        else mesh.surface_ids.astype(np.int32)
    with atomic_path(path) as tmp:
        meshio.write_points_cells(tmp, mesh.vertices, [("triangle", mesh.triangles)],
                                  point_data=surface_fields(solution),
                                  cell_data={"surface": [surface]}, file_format="vtu")


def farfield_rows(solution: dict):
    """The farfield.csv rows of one frequency: the receivers (single incidence), or the
    monostatic directions of an aspect sweep; several incidences follow one another."""
    f = solution["frequency_hz"]
    if "monostatic_far_field" in solution:
        theta, phi = farfield.directions_to_angles(-solution["incident_directions"])
        values = solution["monostatic_far_field"]
    else:
        rec = solution["receivers"]
        ninc = solution["far_field"].shape[0]
        theta, phi = np.tile(rec["theta_deg"], ninc), np.tile(rec["phi_deg"], ninc)
        values = solution["far_field"].ravel()
    ts = farfield.target_strength(values)
    return [[repr(float(f)), f"{t:.10g}", f"{p:.10g}", repr(float(v.real)), repr(float(v.imag)),
             f"{s:.8f}"] for t, p, v, s in zip(theta, phi, values, ts)]


def write_farfield_csv(path, solutions) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(FARFIELD_HEADER)
        for s in solutions:
            w.writerows(farfield_rows(s))


def read_farfield_csv(path) -> dict:
    """farfield.csv (or reference_farfield.csv) as columns of floats, one per header name,
    and the complex far field F = re_F + i im_F."""
    path = Path(path)
    if not path.is_file():
        raise WavescatError(f"far-field table {str(path)!r} does not exist")
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    if not rows or rows[0] != FARFIELD_HEADER:
        raise WavescatError(f"{str(path)!r}: header {','.join(rows[0] if rows else [])!r} is "
                            f"not {','.join(FARFIELD_HEADER)!r}")
    for i, row in enumerate(rows[1:], start=2):
        try:
            if len(row) != len(FARFIELD_HEADER):
                raise ValueError(f"{len(row)} columns")
            [float(x) for x in row]
        except ValueError as exc:
            raise WavescatError(f"{str(path)!r}: line {i} is not {len(FARFIELD_HEADER)} "
                                f"numbers ({exc})") from None
    data = np.array(rows[1:], dtype=float).reshape(-1, len(FARFIELD_HEADER))
    out = {name: data[:, i] for i, name in enumerate(FARFIELD_HEADER)}
    out["F"] = out["re_F"] + 1j * out["im_F"]
    return out


def mesh_warnings(paths) -> list[str]:
    """The `warnings` of mesh statistics files (mesh_stats.json of `wavescat mesh`)."""
    out = []
    for path in paths or []:
        try:
            stats = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise WavescatError(f"mesh statistics {str(path)!r}: cannot be read ({exc})") from None
        out.extend(w for w in stats.get("warnings", []) if w not in out)
    return out


def summary(solutions, case_name: str = "", reference=None, mesh_warnings=()) -> dict:
    """Top-level `dofs`, `elements` and `mesh_fingerprint` are those of the finest mesh (a
    sweep solves each frequency band on its own mesh); every frequency has its own."""
    first = solutions[0]
    finest = max(solutions, key=lambda s: int(s["dofs"]))
    out = {"case": case_name, "formulation": first["formulation"], "space": first["space"],
           "dofs": int(finest["dofs"]), "elements": int(finest["elements"]),
           "mesh_fingerprint": finest["mesh_fingerprint"],
           "meshes": len({s["mesh_fingerprint"] for s in solutions}),
           "backend": first["backend"], "device": first["device"],
           "backend_reason": str(first.get("backend_reason", "")), "precision": first["precision"],
           "operator_format": first["operator_format"],
           "operator_format_reason": str(first.get("operator_format_reason", "")),
           "solver_settings": first["solver_settings"],
           "incidence_directions": int(len(first["incident_directions"])),
           "monostatic": bool(first["monostatic"]), "frequencies": [],
           "warnings": list(mesh_warnings)}
    for s in solutions:
        entry = {"frequency_hz": float(s["frequency_hz"]), "wavenumber": float(s["wavenumber"]),
                 "dofs": int(s["dofs"]), "elements": int(s["elements"]),
                 "mesh_fingerprint": s["mesh_fingerprint"],
                 "elements_per_wavelength": float(s["elements_per_wavelength"]),
                 "operator_format": s["operator_format"],
                 "operator_format_reason": str(s.get("operator_format_reason", "")),
                 "iterations": [int(i) for i in s["iterations"]],
                 "max_iterations": int(np.max(s["iterations"])),
                 "max_residual": float(np.max(s["residuals"])),
                 "stage_times_s": {stage: float(s[f"time_{stage}_s"]) for stage in STAGES}}
        entry["total_time_s"] = sum(entry["stage_times_s"].values())
        if s.get("parallel"):  # ranks, reductions, each rank's stage times and memory
            entry["parallel"] = s["parallel"]
        if reference is not None:
            entry.update(_errors_against(s, reference))
        out["frequencies"].append(entry)
        out["warnings"].extend(w for w in s["warnings"] if w not in out["warnings"])
    return out


def _errors_against(solution, reference) -> dict:
    rows = np.array([[float(x) for x in r] for r in farfield_rows(solution)])
    sel = np.isclose(reference["frequency_hz"], solution["frequency_hz"], rtol=1e-9, atol=0)
    if sel.sum() != len(rows) or not np.allclose(reference["theta_deg"][sel], rows[:, 1], atol=1e-6):
        return {"reference_warning": f"reference far field has {int(sel.sum())} rows at "
                f"{solution['frequency_hz']:g} Hz that do not match the {len(rows)} computed ones"}
    exact = reference["re_F"][sel] + 1j * reference["im_F"][sel]
    return farfield.far_field_errors(rows[:, 3] + 1j * rows[:, 4], exact)


def write_json(path, data) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n")
