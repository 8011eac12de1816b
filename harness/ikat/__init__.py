"""TREC iKAT: submissions and the PTKB statement ranking task.

- submission.py: the run records, a writer per year's format, and `build_submission`
  (TREC rankings + passage texts + PTKB rankings -> a submission);
- validate.py: `validate_file`, the official validators' checks (checks.py holds the
  registry, checks_2023.py the 2023/2024 JSON checks, checks_2025.py the 2025 JSONL ones);
- convert.py: a submission -> TREC runs of its passages and PTKB statements;
- ptkb.py: `rank_ptkb` (bm25, dense, gold) and its evaluation against the NIST PTKB qrels;
- ptkb_topk.py: the `ptkb_topk` query strategy (a plug-in of harness.queries);
- passages.py: documents rebuilt from consecutive official passages, to check segmentation;
- cli.py: `harness ikat validate | to-trec | from-trec`.
"""
