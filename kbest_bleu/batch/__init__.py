"""Batch jobs over K-best tables: streams of Arrow record batches (:mod:`.stream`), parquet in and
out (:mod:`.parquet`), Moses extractor files (:mod:`.moses`), Apache Spark (:mod:`.spark`,
imported on its own: it needs the optional ``pyspark``). Reading and writing files is
:mod:`kbest_bleu.files`' (the table's columns, :class:`Columns`, and reference tables are
re-exported here for the jobs' callers). Names load on first use (PEP 562)."""

from importlib import import_module
from typing import Any

_LAZY = {"score_parquet": "parquet", "Columns": "..files.references", "ReferenceTable": "..files.references",
         "read_lines": "..files.references", "export_moses": "moses", "Summary": "stream", "Tally": "stream", "output_schema": "stream",
         "score_batches": "stream", "score_columns": "stream", "score_table": "stream"}

__all__ = ["Columns", "ReferenceTable", "Summary", "Tally", "export_moses", "output_schema", "read_lines", "score_batches",
           "score_columns", "score_parquet", "score_table"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module = _LAZY[name]
        return getattr(import_module(module if module.startswith(".") else "." + module, __name__), name)
    raise AttributeError(f"module 'kbest_bleu.batch' has no attribute {name!r}")
