"""Geometry kind `krm`: fish outlines from KRM shape files. Bad files give one-line errors
naming the file and the problem; the shipped sardine meshes closed and outward with the
volume of its stations, its swim bladder inside its body."""
import copy
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from wavescat.configuration.case import Case
from wavescat.configuration.config import prepare_config
from wavescat.errors import ConfigError, InputError
from wavescat.geometry import mesh_case
from wavescat.geometry.krm import KrmShape, read_outline, read_shape, shape_estimates

ROOT = Path(__file__).resolve().parents[2]
SARDINE = ROOT / "meshes" / "krm" / "sardine_21cm.toml"
MEDIUM = {"sound_speed": 1500.0, "density": 1000.0}

# A small fish, 10 cm, pointed at both ends (zero stations), its bladder in the middle.
X = [0.0, 0.02, 0.04, 0.06, 0.08, 0.10]
BODY = {"x_b": X, "w_b": [0.0, 0.012, 0.016, 0.014, 0.008, 0.0],
        "z_bU": [0.0, 0.008, 0.010, 0.009, 0.005, 0.0],
        "z_bL": [0.0, -0.008, -0.010, -0.009, -0.005, 0.0]}
BLADDER = {"x_sb": [0.03, 0.04, 0.05, 0.06], "w_sb": [0.0, 0.006, 0.005, 0.0],
           "z_sbU": [0.002, 0.004, 0.004, 0.002], "z_sbL": [0.002, -0.002, -0.001, 0.002]}


def toml_text(arrays: dict, name: str = "small") -> str:
    lines = ["[[shape]]", f'name = "{name}"']
    for key, values in arrays.items():
        lines.append(f"{key} = [{', '.join(repr(float(v)) for v in values)}]")
    return "\n".join(lines) + "\n"


def write(tmp_path, arrays: dict, name="fish.toml") -> Path:
    path = tmp_path / name
    path.write_text(toml_text(arrays))
    return path


def changed(part: dict, key: str, index: int, value) -> dict:
    out = copy.deepcopy(part)
    out[key][index] = value
    return out


def error(path, part="body", **geometry) -> str:
    with pytest.raises(InputError) as info:
        read_shape(KrmShape(path=str(path), part=part, **geometry))
    message = str(info.value)
    assert "\n" not in message
    return message


# -- reading ---------------------------------------------------------------------------

def test_toml_and_csv_read_the_same_stations(tmp_path):
    toml = write(tmp_path, {**BODY, **BLADDER})
    # A table with KRMr's body names, white space, a shorter swim-bladder column set.
    csv = tmp_path / "fish.csv"
    header = ["x_fb", "w_fb", "z_fbU", "z_fbL", "x_sb", "w_sb", "z_sbU", "z_sbL"]
    rows = ["# a comment", ",".join(header)]
    for i in range(len(X)):
        fields = [BODY[k][i] for k in BODY]
        fields += [BLADDER[k][i] for k in BLADDER] if i < 4 else ["", "", "", ""]
        rows.append(",".join(str(f) for f in fields))
    csv.write_text("\n".join(rows) + "\n")
    for part in ("body", "swimbladder"):
        a, b = read_outline(toml, part), read_outline(csv, part)
        for field in ("x", "w", "z_upper", "z_lower"):
            assert np.array_equal(getattr(a, field), getattr(b, field))
    scaled = read_outline(toml, "body", scale=1000.0)
    assert scaled.length == pytest.approx(100.0)


def test_an_edited_file_is_read_again(tmp_path):
    """Shape files are parsed once per version (planning reads them for every rule): an
    edit (a new modification time) gives the new stations."""
    import os

    path = write(tmp_path, BODY)
    assert read_outline(path, "body").length == pytest.approx(0.10)
    st = path.stat()
    path.write_text(toml_text({**BODY, "x_b": [x + 0.01 for x in X[:-1]] + [0.14]}).replace(
        "0.14", "0.2"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert read_outline(path, "body").length == pytest.approx(0.19)


def test_the_shipped_sardine_reads_head_first(tmp_path):
    body = read_shape(KrmShape(path=str(SARDINE), part="body"))
    bladder = read_shape(KrmShape(path=str(SARDINE), part="swimbladder"))
    assert (len(body.x), len(bladder.x)) == (379, 154)
    assert body.x[0] == 0.0 and body.length == pytest.approx(0.210)
    assert body.frusta_volume() == pytest.approx(110.0e-6, rel=0.01)


def test_a_file_of_several_shapes_needs_a_name(tmp_path):
    path = tmp_path / "two.toml"
    path.write_text(toml_text(BODY, "one") + toml_text(BODY, "two"))
    assert "holds 2 shapes (one, two): choose one with geometry.shape" in error(path)
    assert "holds no shape named 'three'" in error(path, shape="three")
    assert len(read_shape(KrmShape(path=str(path), shape="two")).x) == len(X)


# -- bad files: one line naming the file and the problem ---------------------------------

def test_missing_or_unreadable_file(tmp_path):
    assert "no such file" in error(tmp_path / "none.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[[shape]\nx_b = [1, 2")
    assert error(bad).startswith(f"{bad}: cannot read it as TOML")
    assert "holds no swimbladder" in error(write(tmp_path, BODY), "swimbladder")


def test_unknown_part(tmp_path):
    assert error(write(tmp_path, BODY), "gills") == ("part = 'gills': must be one of body, "
                                                     "swimbladder")


def test_too_few_stations(tmp_path):
    short = {k: v[:2] for k, v in BODY.items()}
    assert "body has 2 stations; at least 3 are needed" in error(write(tmp_path, short))


def test_columns_of_different_lengths(tmp_path):
    path = write(tmp_path, {**BODY, "w_b": BODY["w_b"][:-1]})
    assert "the columns differ in length (x_b 6, w_b 5" in error(path)


def test_stations_out_of_order(tmp_path):
    path = write(tmp_path, changed(BODY, "x_b", 3, 0.035))
    assert error(path) == (f"{path}: body: stations out of order: x_b[3] = 0.035 follows "
                           "x_b[2] = 0.04 (x must increase)")


def test_negative_width_and_upper_below_lower(tmp_path):
    path = write(tmp_path, changed(BODY, "w_b", 2, -0.001))
    assert error(path) == (f"{path}: body: station 2 (x = 0.04 m): width w_b = -0.001 "
                           "is negative")
    path = write(tmp_path, changed(BODY, "z_bU", 4, -0.006))
    assert error(path) == (f"{path}: body: station 4 (x = 0.08 m): upper z_bU = -0.006 is "
                           "below lower z_bL = -0.005")
    path = write(tmp_path, changed(BODY, "w_b", 2, 0.0))
    assert "station 2 (x = 0.04 m): zero width inside the outline" in error(path)


def test_non_finite_numbers(tmp_path):
    path = tmp_path / "nan.toml"
    path.write_text(toml_text(BODY).replace("0.016", "nan"))
    assert error(path) == f"{path}: w_b[2] = nan is not a finite number"
    csv = tmp_path / "inf.csv"
    csv.write_text("x_b w_b z_bU z_bL\n0 0 0 0\n0.01 inf 0.01 -0.01\n0.02 0 0 0\n")
    assert error(csv) == f"{csv}: w_b[1] = inf is not a finite number"
    csv.write_text("x_b w_b z_bU z_bL\n0 0 0 0\n0.01 wide 0.01 -0.01\n0.02 0 0 0\n")
    assert error(csv) == f"{csv}: column w_b: 'wide' in data row 2 is not a number"


def test_a_bladder_outside_the_body_names_the_station(tmp_path):
    assert len(read_shape(KrmShape(path=str(write(tmp_path, {**BODY, **BLADDER})),
                                   part="swimbladder")).x) == 4
    # Too wide at its second station: half-width 0.009 in a body of half-width 0.008.
    path = write(tmp_path, {**BODY, **changed(BLADDER, "w_sb", 1, 0.018)})
    message = error(path, "swimbladder")
    assert message.startswith(f"{path}: swimbladder station 1 (x = 0.04 m): the swim "
                              "bladder's ellipse (half-width 0.009")
    assert "is not inside the body's (half-width 0.008, z -0.01 to 0.01 m) there" in message
    # Poking out at the top, between body stations (the body interpolated at x = 0.05).
    path = write(tmp_path, {**BODY, **changed(BLADDER, "z_sbU", 2, 0.0096)})
    assert "swimbladder station 2 (x = 0.05 m)" in error(path, "swimbladder")
    # Beyond the body's stations.
    path = write(tmp_path, {**BODY, **changed(BLADDER, "x_sb", 3, 0.12)})
    assert "station 3 (x = 0.12 m) lies beyond the body's stations" in error(path, "swimbladder")


def test_check_config_reports_a_bad_shape_file(tmp_path):
    with open(ROOT / "config" / "config.yaml") as fh:
        cfg = yaml.safe_load(fh)
    name = next(iter(cfg["cases"]))
    cfg["run"] = [name]
    path = write(tmp_path, {**BODY, **changed(BLADDER, "w_sb", 1, 0.018)})
    cfg["cases"][name]["geometry"] = {"kind": "krm", "path": str(path), "part": "swimbladder"}
    with pytest.raises(ConfigError, match=rf"cases\.{name}\.geometry: {path}: swimbladder "
                                          r"station 1 \(x = 0\.04 m\)"):
        prepare_config(cfg, base_dir=ROOT)
    cfg["cases"][name]["geometry"] = {"kind": "krm", "path": "meshes/krm/sardine_21cm.toml",
                                      "part": "swimbladder"}
    prepared = prepare_config(cfg, base_dir=ROOT)
    assert prepared["cases"][name]["geometry"]["kind"] == "krm"


# -- meshes ----------------------------------------------------------------------------

def case(geometry, h):
    """h at 10 elements per wavelength, frequency sizing and gmsh's curvature sizing only."""
    return Case.from_dict({"geometry": geometry, "frequencies_hz": [1500.0 / (10 * h)],
                           "mesh": {"elements_per_wavelength": 10, "max_element_size": None,
                                    "max_volume_error": None, "match_volume": False}}, MEDIUM)


def winding_numbers(mesh, points) -> np.ndarray:
    """Generalised winding number of `mesh` at each point (1 inside, 0 outside)."""
    out = np.zeros(len(points))
    corners = mesh.vertices[mesh.triangles]  # (T, 3, 3)
    for k, p in enumerate(points):
        a, b, c = (corners[:, i] - p for i in range(3))
        la, lb, lc = (np.linalg.norm(v, axis=1) for v in (a, b, c))
        det = np.einsum("ij,ij->i", a, np.cross(b, c))
        den = (la * lb * lc + np.einsum("ij,ij->i", a, b) * lc
               + np.einsum("ij,ij->i", b, c) * la + np.einsum("ij,ij->i", c, a) * lb)
        out[k] = 2 * np.arctan2(det, den).sum() / (4 * math.pi)
    return out


@pytest.fixture(scope="module")
def sardine():
    """The sardine at the default mesh settings (geometry sizing to 1% of the volume), at
    20 kHz (h = 7.5 mm: the body's curvature sets the size), without volume matching."""
    return [mesh_case(Case.from_dict({
        "geometry": {"kind": "krm", "path": str(SARDINE), "part": part},
        "frequencies_hz": [20000.0], "mesh": {"match_volume": False}}, MEDIUM))
            for part in ("body", "swimbladder")]


@pytest.mark.parametrize("part", [0, 1])
def test_sardine_meshes_closed_outward_with_the_stations_volume(sardine, part):
    mesh, stats = sardine[part]
    shape = KrmShape(path=str(SARDINE), part=("body", "swimbladder")[part])
    outline = read_shape(shape)
    # mesh_case ran the checks (closed, manifold, oriented); outward: positive volume.
    assert mesh.enclosed_volume > 0
    assert mesh.meta["exact_volume"] == pytest.approx(outline.frusta_volume(), rel=0.01)
    assert mesh.enclosed_volume == pytest.approx(outline.frusta_volume(), rel=0.03)
    assert abs(1 - mesh.enclosed_volume / mesh.meta["exact_volume"]) <= 0.01
    assert stats["warnings"] == []  # nor coarse at the tips
    span = mesh.vertices.max(axis=0) - mesh.vertices.min(axis=0)
    assert span[0] == pytest.approx(outline.length, rel=1e-6)
    assert span[1] == pytest.approx(outline.w.max(), rel=0.05)
    estimate = shape_estimates(shape)
    assert estimate[1] == pytest.approx(outline.frusta_volume())
    assert shape.area() \
        == pytest.approx(mesh.total_area, rel=0.1)


def test_tightest_curvature_sits_near_head_and_tail():
    head, tail = KrmShape(path=str(SARDINE), part="body").curvature_features()
    assert (head["name"], tail["name"]) == ("head end", "tail end")
    assert head["point"][0] < 0.02 and tail["point"][0] > 0.19
    assert 0.0005 < head["radius"] < 0.01 and 0.0005 < tail["radius"] < 0.01


def test_sardine_bladder_mesh_lies_inside_its_body_mesh(sardine):
    (body, _), (bladder, _) = sardine
    points = bladder.vertices[::8]  # every eighth vertex: a fast test
    assert np.all(winding_numbers(body, points) > 0.99)
    # ... and the same points moved 5 cm to the side are outside.
    assert np.all(np.abs(winding_numbers(body, points[::4] + [0.0, 0.05, 0.0])) < 0.01)


def test_center_and_scale_move_the_body(tmp_path):
    mm = {k: [1000 * v for v in values] for k, values in BODY.items()}
    path = write(tmp_path, mm)
    mesh, _ = mesh_case(case({"kind": "krm", "path": str(path), "scale": 0.001,
                              "center": [1.0, 2.0, 3.0]}, 0.01))
    lo, hi = mesh.vertices.min(axis=0), mesh.vertices.max(axis=0)
    assert lo[0] == pytest.approx(1.0) and hi[0] == pytest.approx(1.1)
    assert (lo[1] + hi[1]) / 2 == pytest.approx(2.0, abs=1e-4)
    assert (lo[2] + hi[2]) / 2 == pytest.approx(3.0, abs=1e-3)
    assert 0.015 < hi[2] - lo[2] <= 0.02


@pytest.mark.parametrize("dz, said", [(0.0, ""), (0.010, ""), (0.015, "touch or cross"),
                                      (0.0135, "come within 0.0015 m of")])
def test_swim_bladder_against_the_body_is_said_before_meshing(dz, said):
    """The example fish's swim bladder moved dz up (its `center`) passed check-config without a
    word at 15 mm, against the back of the body: its stations, each part at its centre,
    closer than half the element size are said before any job starts (the mesh job then
    measures the surfaces and refuses under half an element)."""
    from wavescat.planning.preflight import nesting_warnings

    with open(ROOT / "config" / "examples" / "fish.yaml") as fh:
        cfg = yaml.safe_load(fh)
    case = cfg["cases"]["sardine_38k"]
    case["geometry"]["path"] = case["inside"][0]["geometry"]["path"] = str(SARDINE)
    case["inside"][0]["geometry"]["center"] = [0.0, 0.0, dz]
    warnings = nesting_warnings(Case.from_dict(case, cfg["medium"], "sardine"))
    assert bool(warnings) is bool(said)
    if said:
        assert warnings[0].startswith(f"cases.sardine.inside[0]: its stations {said} those of "
                                      "cases.sardine (at x = 0.065 m, before lofting), under "
                                      "half the element size h = 0.00389 m"), warnings[0]
        assert "move cases.sardine.inside[0].geometry.center" in warnings[0]
