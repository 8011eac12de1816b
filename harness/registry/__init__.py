"""Name -> implementation registries, the parameters components declare, and what a plug-in
is: harness/registry/table.py holds them all, for now."""

from harness.registry.table import (INT_LIMIT, NOT_RESUMED, PYTHON, REQUIRED, AtLeast, Between, Declaration,
                                    LocalPath, Named, OnePer, Origin, Param, ParamError, Params, ParamType,
                                    PluginNotFound, Registry, UnknownName, answering, arguments, as_declared,
                                    check_given, check_params, check_value, declare, declared, describe_type, extend,
                                    first_sentence, from_text, instances_of, local_path, looks_like_path,
                                    number_problem, object_origin, param_descriptions, plugin_failure,
                                    plugin_import_failure, split_spec, summary_of, usage)

__all__ = ["INT_LIMIT", "NOT_RESUMED", "PYTHON", "REQUIRED", "AtLeast", "Between", "Declaration", "LocalPath", "Named",
           "OnePer", "Origin", "Param", "ParamError", "ParamType", "Params", "PluginNotFound", "Registry",
           "UnknownName", "answering", "arguments", "as_declared", "check_given", "check_params", "check_value",
           "declare", "declared", "describe_type", "extend", "first_sentence", "from_text", "instances_of",
           "local_path", "looks_like_path", "number_problem", "object_origin", "param_descriptions",
           "plugin_failure", "plugin_import_failure", "split_spec", "summary_of", "usage"]
