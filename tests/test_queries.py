"""Query strategies: what each builds, and that none reads a turn after the current one."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace

import pytest

from harness.errors import HarnessError
from harness.queries import STRATEGIES, get, stream
from harness.topics import load
from harness.topics.model import asked


@pytest.fixture(scope="module")
def throat():
    """CAsT 2019 topic 31: 'What is throat cancer?', 'Is it treatable?', ..."""
    return load("cast2019").conversations[0]


def _texts(conversation, name):
    return [query.text for query in stream([conversation], name)]


def test_raw_and_manual(throat):
    assert _texts(throat, "raw")[1] == "Is it treatable?"
    assert _texts(throat, "manual")[1] == "Is throat cancer treatable?"


def test_manual_without_rewrites_is_a_clear_error():
    with pytest.raises(HarnessError, match="turn 3_1 has no manual rewrite"):
        list(stream(load("cast2019:train").conversations, "manual"))


def test_an_empty_official_rewrite_is_sent_as_it_is_with_a_warning_once_a_stream(capsys):
    """Each stream says it (a notebook's second run too), each turn once."""
    conversations = load("ikat2023").conversations
    for _ in range(2):
        queries = {query.qid: query.text for query in stream(conversations, "manual")}
        assert queries["12-1_12"] == ""
        err = capsys.readouterr().err
        assert err.count("warning: turn 12-1_12: the benchmark's manual rewrite is empty, so its query is empty") == 1
        assert err.count("warning:") == 1  # every other iKAT 2023 turn has its rewrite


def test_a_plugin_strategy_giving_empty_queries_is_counted_in_one_warning(throat, capsys):
    """They retrieve nothing and score 0; without a word a failing rewriter looks like a weak one."""
    def sometimes(conversation, turn_index):
        return "" if turn_index % 2 else conversation.turns[turn_index].utterance

    with STRATEGIES.using({"mine": sometimes}):
        texts = _texts(throat, "mine")
    assert texts[1] == "" and texts[0] == "What is throat cancer?"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        f"warning: query strategy 'mine' gave {len(texts) // 2} of {len(texts)} turns an empty query (first: 31_2), "
        "which retrieves nothing and scores 0")
    _texts(throat, "raw")
    assert capsys.readouterr().err == ""


def test_history_strategies(throat):
    assert _texts(throat, "all_history")[2] == "What is throat cancer? Is it treatable? Tell me about lung cancer."
    assert _texts(throat, "first_plus_current")[2] == "What is throat cancer? Tell me about lung cancer."
    assert _texts(throat, "first_plus_current")[0] == "What is throat cancer?"


@pytest.mark.parametrize(("name", "hint"), [
    ("with_responses:", "give the argument (with_responses[:K]) or leave the ':' out ('with_responses')"),
    ("rewrites:", "give the argument (rewrites:FILE)"),  # (its file is required: no name without it)
])
def test_a_strategy_name_ending_in_a_colon_is_refused(name, hint):
    """`with_responses:` would act as `with_responses`, under a run tag of its own: a typo."""
    with pytest.raises(HarnessError, match=re.escape(f"query strategy {name!r} has nothing after its last ':': {hint}")
                       + "$"):
        get(name)


def test_with_responses_adds_the_last_k_responses():
    conversation = load("ikat2023").conversations[0]
    query = get("with_responses:2")[0](conversation, 3, "2")
    turns = conversation.turns
    assert query.context == (turns[0].utterance, turns[1].utterance, turns[2].utterance,
                             turns[1].response, turns[2].response, turns[3].utterance)
    assert get("with_responses")[0](conversation, 2, "5").context[2:4] == (turns[0].response, turns[1].response)
    with pytest.raises(HarnessError, match="with_responses takes"):
        get("with_responses")[0](conversation, 3, "two")


@pytest.mark.slow
def test_hqe_expands_with_salient_earlier_words(throat):
    texts = _texts(throat, "hqe:cast2019")
    assert texts[0] == "What is throat cancer?"
    assert texts[1] == "throat cancer Is it treatable?"  # topic keywords of turn 1 added


def test_variants_read_the_intent():
    conversation = load("cosrec-curated").conversations[0]
    turn = conversation.turns[0]
    variants = turn.query_variants
    assert get("variant")[0](conversation, 0, "1").text == variants[1]
    assert get("variant")[0](conversation, 0, "99").text == variants[-1]
    assert get("all_variants")[0](conversation, 0, None).context == tuple(dict.fromkeys(variants))
    with pytest.raises(HarnessError, match="needs query variants"):
        get("variant")[0](load("cast2019").conversations[0], 0, "1")


@pytest.mark.parametrize("strategy", ["variant:0", "all_variants"])
def test_crowd_turns_without_variants_fall_back_to_the_utterance_said_once_with_a_count(capsys, strategy):
    """277 cosrec-crowd chit-chat turns were searched as written, without a word (OpenDialKG: an error)."""
    conversations = load("cosrec-crowd").conversations
    queries = {query.qid: query.text for query in stream(conversations, strategy)}
    turn = {t.qid: t for c in conversations for t in c.turns}["CoSRec-Crowd_1_7"]
    assert queries[turn.qid] == turn.utterance
    assert capsys.readouterr().err == (
        f"note: query strategy {strategy!r}: 277 of 2329 turns have no query variant (no annotator gave them an "
        "intent; first: CoSRec-Crowd_1_7), so their query is the utterance as written\n")
    list(stream(load("cosrec-curated").conversations, strategy))  # every curated turn has variants
    assert capsys.readouterr().err == ""


def test_cosrec_history_skips_other_intents_of_the_same_utterance():
    """Several intents of one user utterance are separate turns; none is 'history' of another."""
    conversation = load("cosrec-curated").conversations[0]
    second = conversation.turns[1]  # CoSRec-Curated_1_0_0#0, same utterance as turn 0
    assert get("with_responses")[0](conversation, 1, None).context == (second.utterance,)


def test_cast2022_repeated_turns_get_one_query():
    queries = list(stream(load("cast2022").conversations, "with_responses"))
    assert len(queries) == len({q.qid for q in queries}) == 205


# --- no strategy reads a later turn --------------------------------------------------------

SAMPLES = {"cast2019": 0, "ikat2023:train": 2, "cosrec-curated": 0, "cast2022": 2}
EXTRA_ARGS = {"with_responses": ["3"], "hqe": ["{benchmark}"], "variant": ["1"], "ptkb_topk": ["2"],
              "rewrites": ["{rewrites}"], "llm": ["leaktest"]}


@pytest.fixture(scope="module")
def external(tmp_path_factory, llm_server):
    """Inputs of the strategies that read outside the topics: a rewrites file per benchmark
    (made from its turns) and the test LLM endpoint `leaktest` (answers echo the prompt)."""
    from harness.queries.llm import ENDPOINTS, Endpoint

    folder = tmp_path_factory.mktemp("external")
    files = {}
    for benchmark in SAMPLES:
        rewrites = {t.qid: f"rewritten {t.utterance}" for t in load(benchmark).turns}
        files[benchmark] = folder / f"{benchmark}.tsv"
        files[benchmark].write_text("".join(f"{q}\t{text}\n" for q, text in rewrites.items()), encoding="utf-8")
    prompt = folder / "prompt.txt"
    prompt.write_text("Rewrite the last question.\n{history}\nPTKB: {ptkb}\nQuestion: {utterance}\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:  # the endpoint is gone after the module, as its server is
        patch.setitem(ENDPOINTS, "leaktest", Endpoint("test-model", llm_server.base_url, prompt))
        patch.setenv("HARNESS_CACHE", str(folder / "cache"))
        yield lambda arg, benchmark: arg.format(benchmark=benchmark, rewrites=files[benchmark])


def _poisoned(turn):
    """The turn with every text a strategy could read replaced by a marker."""
    fields = {"query_variants": ("LEAK",), "annotations": ()}
    return replace(turn, utterance="LEAK zebra", manual_rewrite="LEAK", automatic_rewrite="LEAK",
                   response="LEAK", provenance=("LEAK",), **{k: v for k, v in fields.items() if hasattr(turn, k)})


def _cases():
    for name in STRATEGIES.names():
        for arg in [None, *EXTRA_ARGS.get(name, [])]:
            for benchmark in SAMPLES:
                jvm = [pytest.mark.java, pytest.mark.slow] if name == "ptkb_topk" else []  # BM25 over the PTKB
                yield pytest.param(name, arg, benchmark, id=f"{name}:{arg or ''}@{benchmark}", marks=jvm)


@pytest.mark.parametrize("name, arg, benchmark", list(_cases()))
def test_no_strategy_reads_a_later_turn(name, arg, benchmark, external):
    conversation = load(benchmark).conversations[SAMPLES[benchmark]]
    strategy = STRATEGIES.get(name)
    arg = external(arg, benchmark) if arg else arg
    try:
        strategy(conversation, 0, arg)
    except HarnessError:  # one reason for every such pair, which the test's id names: one line of -rs
        pytest.skip("the strategy does not apply to this benchmark (the test id names both)")
    for index in range(len(conversation.turns)):
        query = strategy(conversation, index, arg)
        kept = conversation.turns[: index + 1]
        cut = replace(conversation, turns=kept)
        poisoned = replace(conversation, turns=kept + tuple(_poisoned(t) for t in conversation.turns[index + 1:]))
        assert strategy(cut, index, arg) == query
        assert strategy(poisoned, index, arg) == query
        unanswered = replace(conversation, turns=(*kept[:-1], asked(kept[-1])))
        assert strategy(unanswered, index, arg) == query  # nor the turn's answer
        assert "LEAK" not in query.text
        assert query.qid == conversation.turns[index].qid and query.turn_index == index


def test_a_plugin_strategy_is_handed_the_turn_without_its_answer_and_earlier_turns_whole():
    """The current turn's response, gold passages and PTKB provenance would let a query copy what it is
    judged on; the turns before keep theirs, as the benchmark gives them to a system."""
    from harness.queries.plugins import adapt

    seen = []
    strategy = adapt("peek", lambda conversation, turn_index: seen.append(conversation) or "q")
    conversation = load("ikat2023").conversations[0]
    strategy(conversation, 2)
    earlier, (turn,) = seen[0].turns[:2], seen[0].turns[2:]
    given = conversation.turns[2]
    assert given.response and given.provenance and given.ptkb_provenance  # what the benchmark holds
    assert (turn.response, turn.provenance, turn.ptkb_provenance) == (None, (), ())
    assert (turn.qid, turn.utterance, turn.manual_rewrite) == (given.qid, given.utterance, given.manual_rewrite)
    assert earlier == conversation.turns[:2]


@pytest.mark.slow
def test_every_strategy_is_checked_on_some_benchmark(external):
    checked = {name for name in STRATEGIES.names()
               for benchmark in SAMPLES
               for arg in [None, *EXTRA_ARGS.get(name, [])]
               if _applies(name, arg and external(arg, benchmark), benchmark)}
    assert checked == set(STRATEGIES.names())


def _applies(name, arg, benchmark):
    try:
        STRATEGIES.get(name)(load(benchmark).conversations[SAMPLES[benchmark]], 0, arg)
        return True
    except HarnessError:
        return False


@pytest.mark.slow  # imports spaCy for its list (5 s)
def test_hqe_stop_words_are_spacys_english_list_read_without_importing_spacy():
    """hqe reads the list from spaCy's module file; `import spacy` would cost seconds per run."""
    from harness.queries.history import _stopwords

    probe = "import sys; from harness.queries.history import _stopwords; _stopwords(); print('spacy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout == "False\n"
    from spacy.lang.en.stop_words import STOP_WORDS

    assert _stopwords() == frozenset(STOP_WORDS)


@pytest.mark.parametrize("body, why", [
    ({"raw body": "<html>a web page</html>"}, "its body is not JSON"),
    ({"choices": [{"index": 0, "message": {"role": "assistant", "content": ["a rewrite"]}}]},
     "its message content is a JSON list, not text"),
])
def test_an_endpoint_answering_no_chat_completion_is_one_line_naming_it(tmp_path, body, why):
    """The llm strategy's endpoint answering HTTP 200 with a body that is not JSON, or with
    message content that is not text: one line naming the endpoint, not a traceback."""
    from pathlib import Path

    from harness.queries.llm import Endpoint, _ask
    from tests.conftest import start_llm_server

    with start_llm_server(tmp_path, {"labels": {"d": [[body]]}}) as server:
        with pytest.raises(HarnessError, match=rf"^the LLM endpoint at {server.base_url} did not answer with a chat "
                                               rf"completion \({why}\); is it an OpenAI-compatible base URL"):
            _ask(Endpoint("m", server.base_url, Path("prompt.txt")), "rewrite [passage d]", "1_1")


@pytest.mark.parametrize("field", ["{utterance:d}", "{utterance!z}", "{utterance:>99999999999}"])
@pytest.mark.parametrize("door", ["llm strategy", "llm judge"])
def test_a_prompt_field_with_a_format_spec_or_conversion_is_an_error_naming_the_file_and_field(tmp_path, field, door):
    """Filled with text, it was a ValueError (or MemoryError) traceback when the first prompt was made."""
    from harness.errors import InputError
    from harness.judge.llm import Template
    from harness.queries.llm import Endpoint

    prompt = tmp_path / "prompt.txt"
    prompt.write_text(f"Rewrite {field}\n", encoding="utf-8")
    with pytest.raises(InputError) as error:
        Endpoint("m", "http://127.0.0.1:9/v1", prompt).template() if door == "llm strategy" else Template.load(prompt)
    assert str(error.value) == (f"{prompt}: field {field!r} in the prompt template: a field takes no format spec or "
                                "conversion; write {utterance}")
