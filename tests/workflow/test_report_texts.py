"""The report's texts (workflow/report/*.rst, Jinja templates Snakemake renders) say what
the run computed: its title and list of bodies follow the boundary conditions of the config."""
import re
import types
from pathlib import Path

import jinja2
import yaml

ROOT = Path(__file__).resolve().parents[2]


def render(name, *config_files):
    """The report template `name` for the default config overridden by `config_files` (as
    --configfile merges them: keys replace keys)."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    for path in config_files:
        config.update(yaml.safe_load((ROOT / path).read_text()))
    template = jinja2.Template((ROOT / "workflow" / "report" / name).read_text())
    return template.render(snakemake=types.SimpleNamespace(config=config))


def test_title_of_a_gas_body_study_is_not_the_rigid_one():
    text = render("workflow.rst", "config/examples/gas.yaml")
    assert text.splitlines()[0] == "wavescat: target strength"
    assert "rigid bodies" not in text and "Sound-hard scattering" not in text
    listed = re.findall(r"^- case ``(\w+)``: (.*)$", text, re.M)
    assert listed == [("gas_sphere", "fluid"), ("gas_sphere_lossy", "fluid"),
                      ("gas_spheroid_lossy", "fluid")]


def test_bodies_inside_and_studies_are_listed_with_their_boundaries():
    fish = render("workflow.rst", "config/examples/fish.yaml")
    assert "- case ``sardine_38k``: fluid, with 1 body inside (fluid)" in fish
    study = render("workflow.rst", "config/examples/submarine_study.yaml")
    assert "- study ``sub_bistatic`` over ``sub_base`` (rigid)" in study
    mixed = render("workflow.rst", "config/examples/boundaries.yaml")
    kinds = set(re.findall(r"^- case ``\w+``: ([\w-]+)", mixed, re.M))
    assert kinds == {"rigid", "pressure-release", "impedance", "fluid"}


def test_every_caption_a_rule_names_exists():
    rules = "".join(p.read_text() for p in (ROOT / "workflow" / "rules").glob("*.smk"))
    captions = set(re.findall(r'caption="\.\./report/([\w.]+)"', rules))
    assert captions and all((ROOT / "workflow" / "report" / c).is_file() for c in captions)
