"""Batch jobs over K-best tables: streams of Arrow record batches (:mod:`.stream`), parquet in and
out (:mod:`.parquet`), other input formats (:mod:`.readers`), references kept apart
(:mod:`.references`), atomic outputs and signals (:mod:`.output`), Apache Spark (:mod:`.spark`,
imported on its own: it needs the optional ``pyspark``). Names load on first use (PEP 562), so
the CLI can install its signal handlers without loading the kernels."""

from importlib import import_module
from typing import Any

_LAZY = {"score_parquet": "parquet", "Columns": "references", "ReferenceTable": "references",
         "read_lines": "references", "Summary": "stream", "Tally": "stream", "output_schema": "stream",
         "score_batches": "stream", "score_columns": "stream", "score_table": "stream"}

__all__ = ["Columns", "ReferenceTable", "Summary", "Tally", "output_schema", "read_lines", "score_batches",
           "score_columns", "score_parquet", "score_table"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'kbest_bleu.batch' has no attribute {name!r}")
