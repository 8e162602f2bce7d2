"""A parquet table's segment key: the one its scored copy names in its metadata, and a stable
external sort by it (:func:`sort_segments`), for tables whose segments are not contiguous
(DESIGN.md section 2: the streaming job needs whole segments in one run)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import arrow_compute as pc
from ..arrays import to_numpy
from ..errors import InputError
from .inputs import register_input
from .temporaries import temporary_directory
from .readers import seekable
from .references import META_SEGMENT

__all__ = ["segment_key", "sort_segments"]


def segment_key(path: "str | os.PathLike") -> Optional[tuple]:
    """The segment key columns stored in a parquet file's metadata by our writers, or None."""
    if not seekable(path):  # a named pipe read here would be empty for the job: it reports the pipe
        return None
    try:
        meta = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowInvalid):
        return None  # the job reports unreadable files with its own message
    return tuple(json.loads(meta[META_SEGMENT])) if META_SEGMENT in meta else None


def sort_segments(src: "str | os.PathLike", dst: "str | os.PathLike", segment: Sequence[str], *,
                  bucket_rows: int = 1 << 20, batch_size: int = 65536) -> None:
    """Write the parquet table ``src`` to ``dst`` stably sorted by the ``segment`` columns
    (ascending; rows of one segment keep their order), so that every segment is one run.

    Memory is bounded by the key columns, two int64 per row and ``bucket_rows`` rows: pass 1
    reads only the keys and computes each row's position in the sorted order; pass 2 streams
    the table into buckets of consecutive output positions (temporary parquet files); pass 3
    sorts each bucket in memory and appends it to ``dst``.
    """
    register_input(src, "--sort")
    try:
        pf = pq.ParquetFile(src)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{src}: --sort: not a readable parquet file ({exc}); expected a complete parquet "
                         "file") from None
    missing = [c for c in segment if c not in pf.schema_arrow.names]
    if missing:
        raise InputError(f"{src}: --sort: no segment column {missing[0]!r}; columns are "
                         f"{', '.join(pf.schema_arrow.names)}; choose the key with --seg-col")
    keys = pf.read(columns=list(segment))
    order = to_numpy(pc.sort_indices(keys, sort_keys=[(c, "ascending") for c in segment]))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    n_buckets = max(1, -(-len(order) // bucket_rows))
    schema = pf.schema_arrow
    with temporary_directory("kbest_bleu-sort-", Path(dst).parent) as tmp:
        tagged = schema.append(pa.field("__position", pa.int64()))
        writers = [None] * n_buckets
        row0 = 0
        for batch in pf.iter_batches(batch_size=batch_size):
            pos = position[row0:row0 + batch.num_rows]
            row0 += batch.num_rows
            bucket = pos // bucket_rows
            with_pos = pa.RecordBatch.from_arrays(batch.columns + [pa.array(pos)], schema=tagged)
            for b in np.unique(bucket):
                if writers[b] is None:
                    writers[b] = pq.ParquetWriter(Path(tmp) / f"{b}.parquet", tagged, compression="lz4")
                writers[b].write_batch(pc.filter(with_pos, pa.array(bucket == b)))
        for w in writers:
            if w is not None:
                w.close()
        with pq.ParquetWriter(dst, schema, compression="zstd") as out:
            for b, w in enumerate(writers):
                if w is not None:
                    part = pq.read_table(Path(tmp) / f"{b}.parquet")
                    part = pc.take(part, pc.sort_indices(part["__position"]))
                    out.write_table(part.drop_columns(["__position"]))
