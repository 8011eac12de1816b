"""Per-group means of per-query scores: by turn depth, by conversation, by any qid -> group map.

Turn depth is read from the qid when no mapping is given: the last integer among the
qid's `_`/`-` separated parts (`106_3` -> 3, iKAT `9-1-3` -> 3), and the conversation is
everything before that part (`106_3` -> `106`, `9-1-3` -> `9-1`). CAsT 2022 qids
(`132_2-1`) name a node of the topic's tree: its number counts within a branch that starts
below another branch's turn, so neither is read from them (`--topics cast2022`). Topic adapters know
better for their own qids: `depths_from_topics` / `groups_from_topics` read the turn's
depth in its dialogue and any field it declares for its turns or conversations (e.g. CoSRec's intent
type) from a loaded benchmark.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from harness.errors import FLAGS, HarnessError, InputError, Spelling, counted, read_input, shown, verb
from harness.registry import describe_type
from harness.report.compare import Leaderboard, Scores, group_boards
from harness.report.stats import running_mean
from harness.topics import Benchmark, Conversation, check_field
from harness.topics import fields as declared_fields

DEPTH = "turn depth"  # breakdown names the report draws specially (curves, heat map)
CONVERSATION = "conversation"
# md and html leave out a conversation table where this share of its conversations or more hold one query each
ONE_QUERY_SHARE = 0.9
LISTED = 3  # groups a warning names before 'and N more'

_LAST_INT = re.compile(r"^(?P<prefix>.*)[_-](?P<depth>\d+)$")
_TREE_NODE = re.compile(r"^\d+_\d+-\d+$")  # CAsT 2022 <topic>_<branch>-<node>


def _split_qid(qid: str, spelling: Spelling = FLAGS) -> tuple[str, int]:
    """`spelling`: how the advice names the topics (`--topics cast2022`, the API's `topics='cast2022'`)."""
    if _TREE_NODE.match(qid):
        topics = "--topics cast2022" if spelling is FLAGS else spelling.given("topics", "cast2022")
        raise HarnessError(
            f"qid {qid!r} names a CAsT 2022 tree node, whose number is no turn depth (branch 2 starts below "
            f"a turn of branch 1); pass {topics}"
        )
    match = _LAST_INT.match(qid)
    if not match:
        raise HarnessError(
            f"cannot read a turn depth from qid {qid!r} (expected it to end in _N or -N); "
            + ("give --topics NAME, the benchmark whose turns they are (harness topics list names them)"
               if spelling is FLAGS else f"give {spelling.name('topics')}=, the benchmark whose turns they are")
        )
    return match["prefix"], int(match["depth"])


def depths(qids: Iterable[str], spelling: Spelling = FLAGS) -> dict[str, int]:
    return {qid: _split_qid(qid, spelling)[1] for qid in qids}


def conversations(qids: Iterable[str], spelling: Spelling = FLAGS) -> dict[str, str]:
    return {qid: _split_qid(qid, spelling)[0] for qid in qids}


def depths_from_topics(conversations: Iterable[Conversation]) -> dict[str, int]:
    """Turn depth = the turn's position in its dialogue as the adapter gives it (`Turn.depth`: CoSRec's
    utterance, OpenDialKG's turn id), else its 1-based position among its conversation's turns."""
    return {turn.qid: turn.depth if turn.depth is not None else index + 1
            for c in conversations for index, turn in enumerate(c.turns)}


def conversations_from_topics(benchmark: Benchmark) -> dict[str, str]:
    """qid -> its conversation's topic (`Conversation.topic`, else its id). CAsT 2022's paths
    through one topic's tree (`132/1-8` and `132/2-14` begin with the same turns) are one group,
    `132`, so that every turn counts once; a topic of one path (`137/1-12`) is `137` alike."""
    return {turn.qid: conversation.topic or conversation.id
            for conversation in benchmark.conversations for turn in conversation.turns}


def turn_groups(by: str, qids: Iterable[str], benchmark: Benchmark | None,
                spelling: Spelling = FLAGS) -> dict[str, int] | dict[str, str]:
    """qid -> its turn depth (`by` DEPTH) or conversation (CONVERSATION): from the benchmark's turns
    where it is given (CAsT 2022's tree node ids need them), else read from the qids (`106_3` is turn 3
    of conversation 106), a HarnessError where one cannot be read."""
    if benchmark is not None:
        return depths_from_topics(benchmark.conversations) if by == DEPTH else conversations_from_topics(benchmark)
    return (depths if by == DEPTH else conversations)(qids, spelling)


def _one_value(kind: object) -> bool:
    """Whether a field of type `kind` holds one value per turn (a string, a number, None), not a list or mapping."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return all(_one_value(arg) for arg in typing.get_args(kind))
    return (typing.get_origin(kind) or kind) not in (list, tuple, set, frozenset, dict, Sequence, Mapping)


def check_group_field(name: str, key: str, option: str = "--group-field") -> None:
    """Refuse a field benchmark `name` does not declare (topics.check_field), or one holding a list
    (OpenDialKG's entities, CoSRec's keywords): its groups were one per distinct list, about one per
    query, printed as Python tuples; the fields that do group are named."""
    check_field(name, key, option)
    declared = {param.name: param.type for param in declared_fields(name)}
    if not _one_value(declared[key]):
        grouping = [field for field, kind in declared.items() if _one_value(kind)]
        those = (f"the fields that group (one value per turn): {', '.join(grouping)}" if grouping
                 else f"no field of {name} groups")
        raise HarnessError(f"{option} {key!r}: each turn of {name} holds {describe_type(declared[key])} there, not "
                           f"one group; {those}; --groups FILE ('qid group' lines) takes any grouping")


def groups_from_topics(benchmark: Benchmark, key: str) -> dict[str, str]:
    """qid -> the turn's field `key`, or its conversation's (a field of one value per turn the
    benchmark declares: `check_group_field`), for the turns where it is set."""
    groups = {}
    for conversation in benchmark.conversations:
        for turn in conversation.turns:
            value = getattr(turn, key, getattr(conversation, key, None))
            if value is not None:
                groups[turn.qid] = str(value)
    if not groups:
        raise HarnessError(f"no turn of {benchmark.name} carries the field {key!r}")
    return groups


def _group_fields(line: str) -> list[str]:
    """A group file line's fields: a '#' starts a comment at the line's start or after the qid (`106_1 A#old` is
    group A), but is the qid's own within it, as CoSRec's qids hold one (CoSRec-Curated_1_0_0#3)."""
    fields = line.split(maxsplit=1)
    if not fields or fields[0].startswith("#"):
        return []
    rest = fields[1] if len(fields) > 1 else ""
    return [fields[0], *rest.split("#", 1)[0].split()]


def read_groups(path: str | Path) -> dict[str, str]:
    """A two-column 'qid group' file (whitespace separated, '#' comments: _group_fields)."""
    path = Path(path)
    groups: dict[str, str] = {}
    lines = read_input(path).splitlines()
    for number, line in enumerate(lines, start=1):
        fields = _group_fields(line)
        if not fields:
            continue
        if len(fields) != 2:
            raise InputError(path, f"expected 2 fields 'qid group', found {len(fields)}", line=number)
        qid, group = fields
        if qid in groups:
            raise InputError(path, f"qid {qid!r} is grouped twice", line=number)
        groups[qid] = group
    if not groups:
        raise InputError(path, "empty group file: no 'qid group' lines")
    return groups


def empty_groups(groups: Mapping[str, Hashable], qids: Sequence[str]) -> str | None:
    """What a group file's groups holding none of the compared queries (`qids`) are, each with
    its first qid, where others hold some (none at all is an error, `breakdown`'s): a group whose
    qids are all mistyped (9-2-2 for 9-2_2) was left out of the breakdown without a word. None: no such group."""
    compared = set(qids)
    held = {group for qid, group in groups.items() if qid in compared}
    empty: dict[Hashable, str] = {}
    for qid, group in groups.items():
        if group not in held:
            empty.setdefault(group, qid)
    if not held or not empty:
        return None
    named = [f"{shown(str(group))} (first qid {shown(qid)})" for group, qid in list(empty.items())[:LISTED]]
    more = f" and {len(empty) - LISTED} more" if len(empty) > LISTED else ""
    return (f"{counted(len(empty), 'group')} {', '.join(named)}{more} {verb(len(empty), 'holds', 'hold')} none of "
            f"the {len(qids)} compared queries: {verb(len(empty), 'it is', 'they are')} left out; check the qids "
            "against the runs'")


@dataclass(frozen=True)
class Breakdown:
    """Mean score per group for each run, on one measure."""

    name: str  # e.g. "turn depth", "conversation", "intent"
    measure: str
    groups: list[Hashable]  # sorted
    counts: dict[Hashable, int]  # queries per group
    means: dict[str, dict[Hashable, float]]  # run -> group -> mean
    unassigned: int  # queries of the comparison that the mapping does not cover
    # group -> the board's test on the group's queries alone (tested_groups), for a grouping asked for (--groups,
    # --group-field) of several runs; the board's of every measure, whose comparisons this one's measure picks
    tests: Mapping[Hashable, Leaderboard] = field(default_factory=dict)


def _ordered(groups: Iterable[Hashable]) -> list[Hashable]:
    """Groups as every breakdown lists them: by type, then value (depth 2 before 10)."""
    return sorted(groups, key=lambda g: (str(type(g)), g))


def breakdown(scores: Scores, measure: str, groups: Mapping[str, Hashable], name: str,
              mean: Callable[[np.ndarray], float] | None = None) -> Breakdown:
    """A query whose score on `measure` is undefined (Scores.defined) is in no group: a group
    of such queries alone is left out. `mean` takes a group's mean as the board takes a run's
    (None: trec_eval's running sum; responses: nuggetizer's exact mean), so that a group of all
    the queries shows the run's mean to the last digit. The groups' tests (tested_groups) are added after."""
    mean = mean or running_mean
    defined = scores.defined(measure)
    members: dict[Hashable, list[int]] = {}
    for index, qid in enumerate(scores.qids):
        if qid in groups and defined[index]:
            members.setdefault(groups[qid], []).append(index)
    if not members:
        raise HarnessError(f"the {name} mapping covers none of the {len(scores.qids)} compared queries")
    ordered = _ordered(members)
    means = {
        run: {g: mean(scores.values[measure][run][members[g]]) for g in ordered}
        for run in scores.runs
    }
    covered = sum(len(v) for v in members.values())
    return Breakdown(name, measure, ordered, {g: len(members[g]) for g in ordered}, means,
                     int(defined.sum()) - covered)


def tested_groups(board: Leaderboard, groups: Mapping[str, Hashable]) -> dict[Hashable, Leaderboard]:
    """The board's test on each group's queries alone, the groups' comparisons one family
    (compare.group_boards), the groups as `breakdown` lists them: 'is my run better on
    recommendation intents?' is the main table's question on those queries."""
    members: dict[Hashable, list[int]] = {}
    for index, qid in enumerate(board.scores.qids):
        if qid in groups:
            members.setdefault(groups[qid], []).append(index)
    return group_boards(board, {group: members[group] for group in _ordered(members)})


def one_query_groups(b: Breakdown) -> int:
    """How many of the breakdown's groups hold one query: where nearly all do (ONE_QUERY_SHARE), as OpenDialKG's
    1113 conversations of one or two recommendation turns, a table of them repeats the per-query scores."""
    return sum(count == 1 for count in b.counts.values())


def repeats_queries(b: Breakdown) -> bool:
    """Whether md and html leave the conversation breakdown `b` out (csv and json keep every row)."""
    return b.name == CONVERSATION and one_query_groups(b) >= ONE_QUERY_SHARE * len(b.groups)


def conversation_means(scores: Scores, measure: str, conversation: Mapping[str, str],
                       mean: Callable[[np.ndarray], float] | None = None) -> dict[str, float]:
    """Macro average: mean over each conversation's turns, then over conversations, both taken
    as the board takes a run's mean (`mean`, as in `breakdown`; None: added one by one in
    conversation order, as trec_eval adds queries)."""
    mean = mean or running_mean
    by_conversation = breakdown(scores, measure, conversation, CONVERSATION, mean)
    return {run: mean(np.array(list(m.values()))) for run, m in by_conversation.means.items()}
