"""Response evaluation: what systems answer, scored against nuggets through a judge.

    from harness.responses import evaluate
    per_turn, aggregate = evaluate(["run.jsonl"], "nuggets.json", judge="minilm")

Readers (readers.py), nugget banks (nuggets.py), scores (scores.py), assignment through the
judge layer (assign.py, judges.py, baseline.py), evaluation rules (evaluation.py) and reports
(report.py); `harness responses eval` is cli.py.
"""

from __future__ import annotations

from harness.responses.api import compare, evaluate

__all__ = ["compare", "evaluate"]
