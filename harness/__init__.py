"""harness: a TREC-style evaluation harness for conversational search and recommendation."""

__version__ = "0.1.0"

import os as _os

from harness.paths import cache_root as _cache_root

# ir_datasets fixes its home folder when first imported; point it into the harness cache so
# the offline CAsT route finds the shipped files and nothing is written to ~/.ir_datasets.
_os.environ.setdefault("IR_DATASETS_HOME", str(_cache_root() / "ir_datasets"))

# `harness/<benchmark>[/<split>]` ids for ir_datasets (and PyTerrier's irds:), registered
# when ir_datasets is imported (harness/irds.py)
from harness._irds_hook import install as _install_irds

_install_irds()


def __getattr__(name: str):
    """The notebook API (harness/api.py), imported on first use: `harness.evaluate(...)`,
    `harness.compare(...)`, `harness.run(config)`."""
    if name in ("compare", "run"):
        from harness import api

        return getattr(api, name)
    if name == "evaluate":  # the package harness.evaluate, callable as the API's evaluate
        import harness.evaluate

        return harness.evaluate
    raise AttributeError(f"module 'harness' has no attribute {name!r}")
