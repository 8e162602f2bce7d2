"""Formats of other MT tools: Moses/Joshua n-best text, Moses extractor score and feature files."""

from .nbest import dense_features, export_moses, parse_features, read_nbest, write_nbest

__all__ = ["dense_features", "export_moses", "parse_features", "read_nbest", "write_nbest"]
