"""`--fill`'s warning when the filled labels' scale is not the human qrels' (harness.judge.fill)."""

from __future__ import annotations

from pathlib import Path

from harness.judge.base import write_qrels
from harness.judge.fill import fill
from harness.judge.model import Judgment
from harness.paths import qrels_root
from harness.trec import Qrels, read_qrels


def judged_fill(path: Path, human: Qrels, scale: str) -> Path:
    """One label a judge gave on `scale` to a passage of a human-judged query no person judged,
    written as `harness judge` writes it: the qrels and its provenance sidecar."""
    qid = next(iter(human.judgments))
    write_qrels(path, [Judgment((qid, "a-hole"), 1, "ok", "1", False)], {"judge": "file", "scale": scale})
    return path


def test_a_fill_whose_sidecar_is_of_another_version_of_the_file_draws_no_scale_warning(tmp_path):
    """The sidecar's scale is that of the labels it was written for: a file changed since then
    is warned of as such (its provenance line), not as labels on the sidecar's scale."""
    human = read_qrels(qrels_root() / "ikat" / "2024-qrels.txt")
    path = judged_fill(tmp_path / "llm.qrels", human, "yes-no")
    assert fill(human, path).scale_warning is not None  # yes-no labels into iKAT's 0-4 grades
    path.write_text(path.read_text() + f"{next(iter(human.judgments))} 0 another-hole 3\n")
    filled = fill(human, path)
    assert filled.scale_warning is None
    assert filled.provenance.endswith("(WARNING: the file changed since its sidecar was written)")
