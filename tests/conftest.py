"""Shared paths to the real benchmark files the tests run on."""

from __future__ import annotations

from harness.paths import data_root, qrels_root

CAST2021_QRELS = qrels_root() / "cast" / "trec-cast-qrels-docs.2021.qrel"
CAST2021_DOC_RUNS = sorted((data_root() / "cast" / "2021" / "baselines" / "document_runs").glob("*.run"))
CAST2021_PASSAGE_RUNS = sorted((data_root() / "cast" / "2021" / "baselines").glob("*.trec"))
