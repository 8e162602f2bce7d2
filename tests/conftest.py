import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", max_examples=150, deadline=None)
settings.load_profile("ci")

DATA = Path(os.environ.get("KBEST_BLEU_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """../shared/data (or $KBEST_BLEU_DATA). Skips when absent, fails under CI
    (KBEST_BLEU_REQUIRE_DATA=1), so real-data checks cannot silently disappear there."""
    if not (DATA / "moses_mert_nbest.parquet").exists():
        if os.environ.get("KBEST_BLEU_REQUIRE_DATA"):
            pytest.fail(f"real data required (KBEST_BLEU_REQUIRE_DATA=1) but not found at {DATA}")
        pytest.skip(f"real data not found at {DATA}; set KBEST_BLEU_DATA")
    return DATA
