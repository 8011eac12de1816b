"""harness: a TREC-style evaluation harness for conversational search and recommendation."""

__version__ = "0.1.0"

# `import harness` changes no other library's settings: ir_datasets keeps its own home folder
# (the harness reads its CAsT files through ir_datasets from its own paths, topics/cast.py).

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
