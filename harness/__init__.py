"""harness: a TREC-style evaluation harness for conversational search and recommendation."""

__version__ = "0.1.0"

import sys as _sys

# `import harness` changes no other library's settings: ir_datasets keeps its own home folder
# (the harness reads its CAsT files through ir_datasets from its own paths, topics/cast.py).

# `harness/<benchmark>[/<split>]` ids for ir_datasets (and PyTerrier's irds:), registered
# when ir_datasets is imported (harness/irds.py)
from harness._irds_hook import install as _install_irds

_install_irds()

# built-ins of higher layers that register into lower layers' registries, imported on those
# registries' first look-up (harness/_assembly.py)
from harness._assembly import install as _install_assembly

_install_assembly()


class _Package(type(_sys)):
    """`harness.evaluate` stays the API's function: importing the subpackage of the same name
    (`from harness.evaluate import ...`, which the API itself does) would otherwise bind the
    package over it. The package is still `sys.modules["harness.evaluate"]`."""

    def __setattr__(self, name: str, value) -> None:
        if name in _API and isinstance(value, type(_sys)):
            return
        super().__setattr__(name, value)


_API = ("evaluate", "compare", "breakdown", "run", "strategy")
_DECLARE = ("Param", "declare")  # for a plug-in that declares itself (harness/registry/)


def __getattr__(name: str):
    """The notebook API (harness/api.py), imported on first use so that `import harness`
    stays fast: `harness.evaluate(...)`, `harness.compare(...)`, `harness.breakdown(per_query)`,
    `harness.run(config)`, `harness.strategy(name, benchmark)`; and `harness.declare`, `harness.Param` for plug-ins:
    `@harness.declare("my retriever", [harness.Param("alpha", float, 0.5, "weight")])`."""
    if name in _API:
        from harness import api

        return getattr(api, name)
    if name in _DECLARE:
        from harness import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'harness' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the lazily imported ones above, which `__getattr__` alone would
    hide from dir() and a notebook's tab completion."""
    return sorted({*globals(), *_API, *_DECLARE})


_sys.modules[__name__].__class__ = _Package
