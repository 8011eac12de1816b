"""harness: a TREC-style evaluation harness for conversational search and recommendation."""

__version__ = "0.1.0"

import os as _os

from harness.paths import cache_root as _cache_root

# ir_datasets fixes its home folder when first imported; point it into the harness cache so
# the offline CAsT route finds the shipped files and nothing is written to ~/.ir_datasets.
_os.environ.setdefault("IR_DATASETS_HOME", str(_cache_root() / "ir_datasets"))
