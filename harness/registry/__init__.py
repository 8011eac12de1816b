"""Name -> implementation registries (adapters, strategies, retrievers, presets, ...), the
parameters their components declare, and what a plug-in is.

Four modules, each importing only those above it in this list:

- params.py: `Param`, the parameter types, a component's `Declaration`, and the checks and
  help that read them;
- plugins.py: which code is a plug-in's, which distribution installed it, and the one-line
  messages for its import and run failures;
- identity.py: what a plug-in is (`object_origin`), for the resume key of its runs, and
  whether a plug-in's files changed or were reloaded since it was loaded;
- table.py: the `Registry` name table, which loads built-ins, entry points and `python:`
  plug-ins and answers for them.

Their public names are imported here: the rest of the harness, and a plug-in through
`harness.declare` and `harness.Param`, imports them from harness.registry.
"""

from harness.registry.identity import NOT_RESUMED, Origin, object_origin
from harness.registry.params import (INT_LIMIT, REQUIRED, AtLeast, Between, Declaration, LocalPath, Named, OnePer,
                                     Param, ParamError, Params, ParamType, answering, arguments, as_declared,
                                     check_given, check_params, check_value, declare, declared, describe_type,
                                     first_sentence, from_text, instances_of, local_path, looks_like_path,
                                     number_problem, param_descriptions, summary_of, usage)
from harness.registry.plugins import installed_by, plugin_failure, plugin_import_failure
from harness.registry.table import PYTHON, PluginNotFound, Registry, UnknownName, extend, split_spec

__all__ = ["INT_LIMIT", "NOT_RESUMED", "PYTHON", "REQUIRED", "AtLeast", "Between", "Declaration", "LocalPath", "Named",
           "OnePer", "Origin", "Param", "ParamError", "ParamType", "Params", "PluginNotFound", "Registry",
           "UnknownName", "answering", "arguments", "as_declared", "check_given", "check_params", "check_value",
           "declare", "declared", "describe_type", "extend", "first_sentence", "from_text", "installed_by",
           "instances_of", "local_path", "looks_like_path", "number_problem", "object_origin", "param_descriptions",
           "plugin_failure", "plugin_import_failure", "split_spec", "summary_of", "usage"]
