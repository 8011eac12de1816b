"""`ptkb_topk[:K[:METHOD]]`: the utterance, then the K PTKB statements that rank highest for
the turn (default 3, method bm25; see harness.ikat.ptkb), as the iKAT 2023 baselines expand
their queries with the top PTKB statements.

The statements are ranked against the conversation so far (the turn and the utterances
before it), the turn as the user asked it; no later turn is read, nor the turn's answer (see
harness.ikat.ptkb's `handed`). METHOD `gold` ranks none: it takes the turn's assessed PTKB
provenance, the answer, so its runs are oracle (manual) runs, which only their tag tells apart.
One ranker is built per conversation, over that user's own statements, and kept for the
conversation's next turns. (A strategy sees one conversation, so BM25's statistics here are
those of the user's PTKB, where `rank_ptkb` on a whole benchmark pools every conversation's
statements.)

It lives in harness/ikat, beside the ranking it uses, and registers into the query strategies
as a plug-in (harness.queries names it): queries sit below retrieval and import none of it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from harness.errors import HarnessError
from harness.ikat.ptkb import METHODS, handed, require_ptkb
from harness.queries import Strategy, add
from harness.registry import AtLeast, Param
from harness.topics.model import Conversation, PersonalStatement, Query


def _buildable(method: str) -> None:
    """The method is built here with no parameters, as a strategy's arguments give it none: one
    that needs some is an error saying so (a config's check, and before its first query)."""
    needs = [param.name for param in METHODS.declaration(method).params if param.required]
    if needs:
        raise HarnessError(f"ptkb_topk's METHOD {method!r} needs {', '.join(needs)}, and a strategy's arguments give "
                           "a method no parameters: give each a default, or rank with it in a task: ptkb "
                           "experiment, whose retrievers: take params")


@lru_cache(maxsize=64)
def _ranker(factory: Callable, conversation_id: str, personal: tuple[PersonalStatement, ...]):
    # Keyed by the method's object, not its name: another object under that name (a plug-in
    # reloaded, `METHODS.using`) builds its own. Only the statements go in: it sees no turn.
    return factory([Conversation(conversation_id, (), personal=personal)])


class PtkbTopK(Strategy):
    def query(self, conversation: Conversation, turn_index: int, k: int, method: str) -> Query:
        turn = conversation.turns[turn_index]
        _buildable(method)
        ranker = _ranker(METHODS.get(method), conversation.id, conversation.personal)
        ranking = ranker.rank([(handed(method, conversation, turn_index), turn_index)])[turn.qid][:k] if k else []
        texts = {statement.id: statement.text for statement in conversation.personal}
        chosen = [texts[pid] for pid, _ in ranking]
        return Query(turn.qid, " ".join([turn.utterance, *chosen]), conversation.id, turn_index,
                     (turn.utterance, *chosen))

    def check(self, k: int, method: str) -> None:
        _buildable(method)

    def check_topics(self, conversations, k: int, method: str) -> None:
        require_ptkb(conversations, self.name)


add(PtkbTopK("ptkb_topk", "the utterance, then the K PTKB statements that rank highest for the conversation so far", [
    Param("K", AtLeast(0), 3, "how many of the user's PTKB statements to add"),
    Param("METHOD", str, "bm25", "the PTKB ranking method (harness.ikat.ptkb); gold adds the turn's assessed "
          "PTKB provenance: an oracle, a manual run")]))
