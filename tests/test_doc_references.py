"""Every pointer of the form `config/README.md, "Section"` in the repository's texts (docs,
configs, profiles, rule files, report captions, code comments) names a section that exists."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POINTER = re.compile(r'((?:bench/|config/|meshes/krm/)?README(?:\.md)?),? (?:section )?"([^"]+)"')
TEXTS = ["*.md", "Snakefile", "Dockerfile", "config/**/*.yaml", "profiles/**/*", "docs/*.md",
         "workflow/**/*.smk", "workflow/**/*.rst", "bench/*.md", "meshes/**/*.md", "src/**/*.py"]


def _headings(path: Path) -> list[str]:
    return [line.lstrip("#").strip().replace("`", "")
            for line in path.read_text().splitlines() if line.startswith("#")]


def _pointers():
    files = {p for pattern in TEXTS for p in ROOT.glob(pattern) if p.is_file()}
    for path in sorted(files):
        for lineno, line in enumerate(path.read_text(errors="ignore").splitlines(), 1):
            for doc, section in POINTER.findall(line):
                target = doc if doc.endswith(".md") else doc + ".md"
                yield f"{path.relative_to(ROOT)}:{lineno}", ROOT / target, section


def test_every_section_pointer_names_a_section():
    found = list(_pointers())
    assert len(found) > 20
    missing = [(where, f"{doc.relative_to(ROOT)}: {section!r}") for where, doc, section in found
               if not any(h.startswith(section.replace("`", "")) for h in _headings(doc))]
    assert missing == []
