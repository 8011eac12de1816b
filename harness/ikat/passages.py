"""The official iKAT 2023 passages as a real-data check of passage segmentation.

ClueWeb22 itself is not shipped, but the provenance passages are, and the windowing makes
them self-describing: passage i+1 of a document repeats the last 5 sentences of passage i.
So a run of consecutive official passages, each added without its repeated head, is a
stretch of the original document, and segmenting it again must give those passages back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from harness.corpus import Document
from harness.topics.ikat import provenance_passages


@dataclass(frozen=True)
class RebuiltDocument:
    document: Document
    passages: tuple[str, ...]  # the official passage texts, first to last


@dataclass(frozen=True)
class Agreement:
    documents: int
    documents_same: int
    passages: int
    passages_same: int

    def __str__(self) -> str:
        return (
            f"{self.documents_same}/{self.documents} documents ({self.documents_same / self.documents:.1%}), "
            f"{self.passages_same}/{self.passages} passages ({self.passages_same / self.passages:.1%})"
        )


def official_passages() -> dict[str, dict[int, str]]:
    """ClueWeb22 id -> passage number -> text, train and test; the files print each passage
    between newlines, as the organisers' trecweb writer does, so one character goes each side."""
    passages: dict[str, dict[int, str]] = defaultdict(dict)
    for split in ("test", "train"):
        for record, passage_id, text in provenance_passages(split):
            docid, _, number = passage_id.rpartition(":")
            if not number.isdigit():
                raise record.error(f"passage_id {number!r} is not a passage number")
            passages[docid][int(number)] = text[1:-1]
    return passages


def _append_unrepeated(text: str, following: str) -> str | None:
    """`text` plus `following` without the sentences it repeats (its longest prefix that ends
    `text` at a word boundary), or None when the two share no text."""
    longest = max(
        (
            n
            for n in range(1, min(len(text), len(following)) + 1)
            if text.endswith(following[:n]) and (n == len(text) or text[-n - 1] == " ")
        ),
        default=0,
    )
    return text + following[longest:] if longest else None


def rebuilt_documents() -> list[RebuiltDocument]:
    """One document per maximal run of two or more consecutive official passages."""
    rebuilt = []
    for docid, texts in official_passages().items():
        numbers = sorted(texts)
        runs: list[list[int]] = [[numbers[0]]]
        for number in numbers[1:]:
            if number == runs[-1][-1] + 1:
                runs[-1].append(number)
            else:
                runs.append([number])
        for run in (run for run in runs if len(run) > 1):
            text: str | None = texts[run[0]]
            for number in run[1:]:
                text = _append_unrepeated(text, texts[number]) if text is not None else None
            if text is not None:
                document = Document(f"{docid}:{run[0]}-{run[-1]}", text)
                rebuilt.append(RebuiltDocument(document, tuple(texts[n] for n in run)))
    return rebuilt


def _normalised(text: str) -> str:
    """One space for each run of whitespace. spaCy ends a sentence with the whitespace token
    that follows it and the windows add one space, so every re-segmentation lengthens such
    gaps by one character; words and sentence boundaries are what the ids depend on."""
    return " ".join(text.split())


def agreement(rebuilt: list[RebuiltDocument], segmented: Iterable[list[str]]) -> Agreement:
    """How many rebuilt documents, and official passages, segmentation gives back."""
    documents_same = passages = passages_same = 0
    for original, texts in zip(rebuilt, segmented, strict=True):
        same = [_normalised(a) == _normalised(b) for a, b in zip(original.passages, texts)]
        documents_same += len(texts) == len(original.passages) and all(same)
        passages += len(original.passages)
        passages_same += sum(same)
    return Agreement(len(rebuilt), documents_same, passages, passages_same)
