"""The I/O floor of a scoring job: read the parquet file in record batches, add a float column,
write it with zstd; no scoring. ``python benchmarks/io_floor.py IN.parquet OUT.parquet``."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main(src: str, dst: str) -> None:
    pf = pq.ParquetFile(src)
    writer = None
    for batch in pf.iter_batches(batch_size=65536):
        out = pa.RecordBatch.from_arrays([*batch.columns, pa.array(np.zeros(batch.num_rows))],
                                         names=[*batch.schema.names, "bleu"])
        if writer is None:
            writer = pq.ParquetWriter(dst, out.schema, compression="zstd")
        writer.write_batch(out)
    writer.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
