"""Every workflow test runs in a temporary copy of the repository: `tmp_path` holds the copy
(fixture `repo` of tests/conftest.py), so a test that runs Snakemake in `tmp_path` never
sees nor touches the user's results/ or .snakemake/."""
import pytest


@pytest.fixture(autouse=True)
def _workflow_copy(repo):
    return repo
