"""Judges: a label from a declared scale for each (query with its conversation, text) pair,
from a chat model (`llm`) or from labels recorded earlier (`file`), reproducibly.

- `scales`: the label scales (relevance 0-3 and 0-4, support 0-2, yes/no) and strict parsing;
- `model`: what is judged (`Item`) and what comes back (`Judgment`);
- `base`: the `Judge` protocol, the `JUDGES` registry, and qrels written with a provenance
  sidecar (`QRELS.provenance.json`) that every report using them quotes;
- `llm`: any OpenAI-compatible chat endpoint, cached on disk, retried, bounded concurrency;
- `file`: recorded labels (a qrels file);
- `make`: the one factory that makes a judge a command or the API names, through the registry;
- `agree`: agreement between two sets of labels (Cohen's kappa, weighted kappa) and between
  two system orderings (Kendall's tau, tau_AP);
- `pairs`: the unjudged (query, passage) pairs in the top k of runs, as items to judge;
- `fill`: human qrels with their holes filled from a judge's qrels.

Elsewhere (harness/_assembly.py): the `minilm` judge (offline support baseline) is harness.responses.baseline's,
the `assignments` judge (recorded nugget assignments) harness.responses.assign's.
"""
