"""solve.records is the one module of result files: the far-field table reader serves both
import paths and says what is wrong with a bad table."""
import numpy as np
import pytest

from wavescat.errors import WavescatError
from wavescat.solve import records

HEADER = ",".join(records.FARFIELD_HEADER)


def test_farfield_table_reads_complex_amplitudes(tmp_path):
    path = tmp_path / "farfield.csv"
    path.write_text(HEADER + "\n100.0,90,0,0.5,-0.25,-5.0\n100.0,90,180,1e-3,2e-3,-53.0\n")
    table = records.read_farfield_csv(path)
    assert np.array_equal(table["F"], [0.5 - 0.25j, 1e-3 + 2e-3j])
    assert np.array_equal(table["re_F"], [0.5, 1e-3]) and np.array_equal(table["phi_deg"], [0, 180])


@pytest.mark.parametrize("text, message", [
    ("", "header '' is not 'frequency_hz,theta_deg"),
    ("f,theta,phi,re,im,ts\n1,2,3,4,5,6\n", "header 'f,theta,phi,re,im,ts' is not"),
    (HEADER + "\n1,2,3,4,5\n", "line 2 is not 6 numbers (5 columns)"),
    (HEADER + "\n1,2,3,4,5,6\n1,2,3,x,5,6\n", "line 3 is not 6 numbers"),
])
def test_bad_tables_are_named(tmp_path, text, message):
    path = tmp_path / "farfield.csv"
    path.write_text(text)
    with pytest.raises(WavescatError) as err:
        records.read_farfield_csv(path)
    assert str(path) in str(err.value) and message in str(err.value)
