"""Batch jobs over K-best tables: streams of Arrow record batches (:mod:`.stream`), parquet in and
out (:mod:`.parquet`), references kept apart (:mod:`.references`), Apache Spark (:mod:`.spark`,
imported on its own: it needs the optional ``pyspark``)."""

from .parquet import score_parquet
from .references import Columns, ReferenceTable, read_lines
from .stream import Summary, Tally, output_schema, score_batches, score_columns, score_table

__all__ = ["Columns", "ReferenceTable", "Summary", "Tally", "output_schema", "read_lines", "score_batches",
           "score_columns", "score_parquet", "score_table"]
