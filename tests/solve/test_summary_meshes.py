"""summary.json of a swept case: top-level dofs/elements of the finest mesh, each frequency
its own, and the warnings of the meshes (coarse against the body) in its `warnings`."""
import json

import numpy as np

from wavescat.solve import records


def solution(f, dofs, warnings=()):
    return {"frequency_hz": f, "wavenumber": 2 * np.pi * f / 1500, "formulation": "osrc",
            "space": "P1", "dofs": dofs, "elements": 2 * dofs - 4, "mesh_fingerprint": f"m{dofs}",
            "backend": "cpu", "device": "cpu", "precision": "double", "operator_format": "dense",
            "solver_settings": {}, "incident_directions": np.zeros((1, 3)), "monostatic": False,
            "elements_per_wavelength": 10.0, "iterations": np.array([5]),
            "residuals": np.array([1e-6]), "warnings": list(warnings),
            **{f"time_{s}_s": 0.1 for s in records.STAGES}}


def test_summary_per_frequency_meshes_and_mesh_warnings(tmp_path):
    (tmp_path / "b0.json").write_text(json.dumps({"warnings": ["coarse tip"]}))
    (tmp_path / "b1.json").write_text(json.dumps({"warnings": ["coarse tip", "volume off"]}))
    warnings = records.mesh_warnings([tmp_path / "b0.json", tmp_path / "b1.json"])
    assert warnings == ["coarse tip", "volume off"]
    sols = [solution(100.0, 200), solution(1000.0, 5000, ["epw low"]), solution(700.0, 5000)]
    s = records.summary(sols, "sweep", mesh_warnings=warnings)
    assert (s["dofs"], s["elements"], s["meshes"]) == (5000, 9996, 2)
    assert [f["dofs"] for f in s["frequencies"]] == [200, 5000, 5000]
    assert [f["elements"] for f in s["frequencies"]] == [396, 9996, 9996]
    assert s["warnings"] == ["coarse tip", "volume off", "epw low"]
