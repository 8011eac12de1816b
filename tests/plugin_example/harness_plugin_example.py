"""A researcher's own system: a word-overlap search function and a query strategy."""

from collections import Counter

_INDEXES = {}  # corpus fingerprint -> word -> docids


def _postings(corpus):
    if corpus.fingerprint not in _INDEXES:
        index = _INDEXES[corpus.fingerprint] = {}
        for document in corpus.documents():
            for word in set(document.contents.lower().split()):
                index.setdefault(word, []).append(document.id)
    return _INDEXES[corpus.fingerprint]


def overlap(query: str, k: int, *, corpus=None, boost: float = 1.0):
    """Documents sharing the most words with the query."""
    counts = Counter()
    for word in sorted(set(query.lower().split())):  # (a set's order changes per process: so would the ties cut at k)
        counts.update(_postings(corpus).get(word, ()))
    return [(docid, boost * count) for docid, count in counts.most_common(k)]


def last_two(conversation, turn_index, arg=None):
    """The turn and the one before it."""
    return " ".join(turn.utterance for turn in conversation.turns[max(0, turn_index - 1):turn_index + 1])
