"""Label scales a judge answers on, and strict parsing of an answer.

An answer counts only when it is exactly one label of the scale (surrounding whitespace and
one trailing full stop aside): "2" is 2 on a 0-3 scale; "2/3", "Score: 2", "5" or "two" are
unparseable, never mapped to 0 or clipped to the scale.
"""

from __future__ import annotations

import numbers

import re
from dataclasses import dataclass

from harness.errors import HarnessError, counted
from harness.registry import Registry, UnknownName, instances_of

_LABEL = re.compile(r"\s*([0-9]+)\.?\s*")  # ASCII digits: "\d" would take "３" or "٣" for 3


@dataclass(frozen=True)
class Scale:
    name: str
    labels: tuple[int, ...]
    meaning: tuple[str, ...]  # one line per label, in the order of `labels`

    def parse(self, answer: str) -> int | None:
        """The label the answer names, or None when it is not exactly one label on the scale."""
        match = _LABEL.fullmatch(answer)
        if match is None:
            return None
        label = int(match.group(1))
        return label if label in self.labels else None

    def check(self, label: object, who: str = "the judge") -> None:
        """Refuses a label a judge (a plug-in's, say) gave off its own scale: counted, never
        written or scored as if it were a grade."""
        if isinstance(label, bool) or not isinstance(label, numbers.Integral) or label not in self.labels:
            # 1.0, True: not 1; numpy's integers (an argmax) are whole numbers
            raise HarnessError(f"{who} gave label {label!r}, which is not on its scale {self.span()}")

    def problem(self) -> str | None:
        """What is wrong with a scale a plug-in declared, in words following its name (`has label
        'yes', not a whole number; expected ...`); None where it is well formed. A label that is
        not a whole number could never be given (`check` refused each), a label listed twice, or
        meanings not one per label, put each label beside another's meaning in a prompt."""
        labels, meaning = self.labels, self.meaning
        if not isinstance(self.name, str) or not self.name.strip():
            wrong = "has a name that is not a non-empty str"
        elif not isinstance(labels, (tuple, list)) or not labels:
            wrong = f"has labels {_shown(labels)}"
        elif any(isinstance(label, bool) or not isinstance(label, numbers.Integral) for label in labels):
            label = next(x for x in labels if isinstance(x, bool) or not isinstance(x, numbers.Integral))
            wrong = f"has label {_shown(label)}, not a whole number"
        elif len(set(labels)) < len(labels):
            wrong = f"lists label {next(x for i, x in enumerate(labels) if x in labels[:i])} twice"
        elif not isinstance(meaning, (tuple, list)) or not all(isinstance(line, str) for line in meaning):
            wrong = f"has meaning {_shown(meaning)}"
        elif len(meaning) != len(labels):
            wrong = f"has {counted(len(labels), 'label')} and {counted(len(meaning), 'meaning')}"
        else:
            return None
        return (f"{wrong}; expected Scale(name, labels, meaning): a name (a str), labels (a tuple of distinct "
                "whole numbers) and their meaning (a tuple of str, one for each label, in their order)")

    def span(self) -> str:
        """'relevance-0-4 (0 to 4)': the scale's name and its labels, as an error names them."""
        return f"{self.name} ({min(self.labels)} to {max(self.labels)})"

    def describe(self) -> str:
        """'0 = ..., 1 = ...': the scale as a prompt or a report states it."""
        return "\n".join(f"{label} = {text}" for label, text in zip(self.labels, self.meaning))


def _shown(value: object) -> str:
    """A value as an error quotes it: its repr, or its type where that is long."""
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__} of {len(text)} characters"


SCALES: Registry[Scale] = Registry("scale", group="harness.scales", summary=lambda scale: scale.span())


@SCALES.adapter
def _plugin_scale(name: str, obj: object) -> Scale:
    """A plug-in's scale is a well-formed Scale (Scale.problem) named as its entry point is: a labels
    file records the scale by its name, which must find it again."""
    scale = instances_of(SCALES.kind, Scale)(name, obj)
    problem = scale.problem()
    if problem is not None:
        raise HarnessError(f"scale {name!r} {problem}")
    if scale.name != name:
        raise HarnessError(f"scale {name!r} is named {scale.name!r}: a scale's name is the one it is registered by")
    return scale


def not_found(name: object) -> str | None:
    """Why the scale `name`, as a labels file's sidecar records it, is not found here, to follow
    its name in a message (`which no installed package registers: ...`, or why its package's
    cannot be loaded: a name registered twice, a broken entry point); None where it is found.
    Labels on a plug-in's scale read where its package is not installed were taken for
    labels of no recorded scale: filed again as relevance-0-4, filled with no word."""
    if not isinstance(name, str):
        return "which is not a scale's name"
    try:
        SCALES.get(name)
    except UnknownName:
        return "which no installed package registers (install the package whose scale it is)"
    except HarnessError as error:
        return f"which cannot be loaded here ({error})"
    return None


def _scale(name: str, summary: str, meaning: tuple[str, ...]) -> Scale:
    scale = Scale(name, tuple(range(len(meaning))), meaning)
    SCALES.add(name, scale, summary)
    return scale


# UMBRELA's four grades (TREC RAG 2024), in our words
RELEVANCE_0_3 = _scale("relevance-0-3", "relevance in UMBRELA's four grades (TREC RAG 2024), 0 to 3", (
    "the passage has nothing to do with the question",
    "the passage is on the topic but does not answer the question",
    "the passage answers the question in part, or the answer is unclear or buried",
    "the passage is dedicated to the question and answers it",
))
# iKAT's assessors' five grades (and the organisers' GPT-4 pool judgments)
RELEVANCE_0_4 = _scale("relevance-0-4", "relevance in iKAT assessors' five grades, 0 to 4", (
    "not relevant: nothing useful for the user's question",
    "related: on the topic, but no answer",
    "partially relevant: part of an answer, or an answer that needs more to be useful",
    "relevant: answers the question",
    "highly relevant: answers the question fully, suited to this user and conversation",
))
SUPPORT_0_2 = _scale("support-0-2", "how far a text backs a statement: 0 no, 1 partial, 2 full support", (
    "no support: the text does not back the statement",
    "partial support: the text backs part of the statement",
    "support: the text backs the whole statement",
))
YES_NO = _scale("yes-no", "a yes or no answer: 0 no, 1 yes", ("no", "yes"))
