"""Parmesan (Barančíková, WMT 2014): Meteor with exact matches only, on references paraphrased
towards each hypothesis (section 4), "Before Depfix" (Depfix, the paper's Czech grammar
fixer, is not available).

Python faces: :func:`load_table`, :func:`paraphrase` (one pair), :func:`paraphrase_segments`
and :func:`parmesan_segments` (whole K-best tables); :func:`from_options` builds the
:class:`~kbest_bleu.metrics.base.Metric` used by ``kbest-bleu score --metric parmesan`` and Spark.
"""

from .api import ParmesanResult, load_table, paraphrase, paraphrase_segments, parmesan_segments
from .metric import ParmesanMetric, from_options

__all__ = ["ParmesanMetric", "ParmesanResult", "from_options", "load_table", "paraphrase", "paraphrase_segments",
           "parmesan_segments"]
