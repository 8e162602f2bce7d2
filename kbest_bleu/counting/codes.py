"""The codes the counting kernels take as arguments (plain integers, importable without numba)."""

from __future__ import annotations

__all__ = ["BYTE_DIGIT", "BYTE_DOT", "BYTE_HYPHEN", "BYTE_MAY_SPACE", "BYTE_ORDINARY", "BYTE_PUNCT", "BYTE_SPACE",
           "REF_AVERAGE", "REF_CLOSEST", "REF_SHORTEST", "RULES_13A", "RULES_NONE", "RULES_ZH"]

# effective reference length policies (README, "Presets")
REF_CLOSEST = 0
REF_SHORTEST = 1
REF_AVERAGE = 2

# byte classes of the token splitter (kbest_bleu.counting._kernels._split)
BYTE_ORDINARY = 0
BYTE_SPACE = 1  # an ASCII whitespace byte
BYTE_MAY_SPACE = 2  # lead byte of a multi-byte character that may be whitespace
# bytes the 13a/zh regex rules look at (ordinary bytes when no rules apply)
BYTE_PUNCT = 3  # rule 1's class [{-~[-` -&(-+:-@/] (space excepted)
BYTE_DOT = 4  # '.' and ','
BYTE_HYPHEN = 5
BYTE_DIGIT = 6

# what the splitter does besides str.split()
RULES_NONE = 0  # plain str.split()
RULES_ZH = 1  # sacrebleu TokenizerRegexp's four rules, then str.split()
RULES_13A = 2  # the same on the line padded with a space on each side (Tokenizer13a)
