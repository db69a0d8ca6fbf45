"""The results contract read by another tool: `ctxbench run` writes points.parquet (the
project's own Parquet writer) and points.csv; pyarrow reads the Parquet file with the CSV's
columns, types and every cell."""

import csv
from pathlib import Path

import pyarrow.parquet as pq

from conftest import cli


def test_points_parquet_holds_the_csv_cells(tmp_path):
    root = Path(__file__).resolve().parents[3]
    cli("run", str(root / "experiments" / "ablation-beam.toml"), "--quick", "--out", str(tmp_path))
    out = tmp_path / "ablation-beam"
    table = pq.read_table(out / "points.parquet")
    rows = list(csv.reader(open(out / "points.csv", newline="")))
    header, body = rows[0], rows[1:]
    assert table.column_names == header
    assert table.num_rows == len(body) == 8
    types = {f.name: str(f.type) for f in table.schema}
    assert (types["row"], types["beam"], types["max_active"], types["endpointing"]) == (
        "string", "double", "int64", "bool")
    cols = table.to_pydict()
    for j, name in enumerate(header):
        for i, cell in enumerate(body):
            v = cols[name][i]
            if v is None:
                assert cell[j] == "", (name, i)
            elif isinstance(v, bool):
                assert cell[j] == ("true" if v else "false"), (name, i)
            elif isinstance(v, (int, float)):
                assert float(cell[j]) == v, (name, i, v, cell[j])
            else:
                assert cell[j] == v, (name, i)
    # The sweep's figures are in both: eight beams, a WER each.
    assert sorted(cols["beam"]) == sorted(float(r[header.index("beam")]) for r in body)
    assert all(w is not None and w > 0 for w in cols["wer"])
