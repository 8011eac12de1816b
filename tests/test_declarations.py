"""Declared components: every built-in says what it is and what it takes, the config check
reads those declarations, and a plug-in is checked the same way, by its own declaration
(`harness.declare`) or its signature. Fast: no index, no model, no Java."""

from __future__ import annotations

import inspect
import sys
import textwrap

import pytest

from harness.errors import HarnessError
from harness.evaluate.presets import Preset
from harness.ikat.ptkb import METHODS, RetrievalRanker
from harness.judge.base import JUDGES
from harness.queries import STRATEGIES, Function, Strategy
from harness.registry import REQUIRED, Declaration, Registry
from harness.retrieve import RETRIEVERS
from harness.runner.cli_components import REGISTRIES, registry
from harness.runner.config import ConfigError, parse_config
from harness.topics import load



def _keywords(function, skip: int = 0, leave: tuple[str, ...] = ("self",)) -> list[tuple[str, object]]:
    """(name, default) of a callable's parameters after the first `skip`, as a declaration has them."""
    params = [p for p in inspect.signature(function).parameters.values() if p.name not in leave][skip:]
    return [(p.name, REQUIRED if p.default is p.empty else p.default) for p in params
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _declared(declaration: Declaration, lower: bool = False) -> list[tuple[str, object]]:
    return [(p.name.lower() if lower else p.name, p.default) for p in declaration.params]


def test_every_built_in_factory_takes_exactly_the_parameters_it_declares():
    for name in RETRIEVERS.names():
        assert _keywords(RETRIEVERS.get(name), leave=("corpus",)) == _declared(RETRIEVERS.declaration(name)), name
    for name in STRATEGIES.names():  # arguments after `NAME:`, in order, as the strategy receives them
        strategy, declared = STRATEGIES.get(name), _declared(STRATEGIES.declaration(name), lower=True)
        if isinstance(strategy, Function):
            assert _keywords(strategy.function, skip=2) == declared, name
        else:  # `query` is always handed every argument, the defaults filled in
            assert [param for param, _ in _keywords(strategy.query, skip=2)] == [p for p, _ in declared], name
    for name in JUDGES.names():
        assert _keywords(JUDGES.get(name)) == _declared(JUDGES.declaration(name)), name
    for name in ("bm25", "dense"):  # how a turn's query is made, then the retriever's own
        own = _keywords(RetrievalRanker, skip=2)
        assert _declared(METHODS.declaration(name)) == own + _declared(RETRIEVERS.declaration(name)), name
    assert METHODS.declaration("gold").params == ()


def test_every_built_in_component_and_parameter_is_described():
    """Of every kind `harness components` lists: a summary of one line, each parameter's description."""
    for kind in REGISTRIES:
        components = registry(kind)
        for name in components.built_ins():
            declaration = components.declaration(name)
            assert declaration.summary and "\n" not in declaration.summary, (kind, name)
            assert all(param.desc for param in declaration.params), (kind, name)


def test_harness_components_lists_every_kind_a_user_names():
    assert {"benchmark", "strategy", "retriever", "task", "ptkb-method", "judge", "corpus-format", "splitter",
            "engine", "dense-backend", "approx-index", "measure", "preset", "test", "correction", "report-format",
            "scale", "response-format", "nugget-bank"} <= set(REGISTRIES)


def test_a_built_in_registered_without_a_summary_is_summarised_by_its_docstrings_first_sentence():
    """Its first sentence on one line, not its first line (which may stop mid-sentence); an
    instance gets none from its type's docstring, which is of its kind, not of it."""
    examples: Registry = Registry("example")

    @examples.register("split")
    def split(text: str) -> list[str]:
        """Splits a text at its full stops, e.g. the ones
        here. Not at commas."""
        return text.split(".")

    examples.add("declared", split, "declared summary")
    examples.add("preset", Preset(("RR",), None, "a source"))
    assert examples.declaration("split").summary == "Splits a text at its full stops, e.g. the ones here."
    assert examples.declaration("declared").summary == "declared summary"
    assert examples.declaration("preset").summary == ""


def test_a_name_registered_twice_is_one_line_naming_the_registry_the_name_and_what_took_it_first():
    """A HarnessError, not a bare ValueError: a notebook cell that registers run again says so."""
    examples: Registry = Registry("example")

    @examples.register("mine")
    def search() -> None:
        """Searches."""

    with pytest.raises(HarnessError) as error:
        examples.add("mine", search)
    assert str(error.value) == ("example 'mine' is registered twice (first: tests.test_declarations."
                                "test_a_name_registered_twice_is_one_line_naming_the_registry_the_name_and_what_took_"
                                "it_first.<locals>.search)")
    examples.add("preset", Preset(("RR",), None, "a source"))
    with pytest.raises(HarnessError, match=r"^example 'preset' is registered twice$"):  # an instance: no name to give
        examples.add("preset", Preset(("RR",), None, "a source"))


def _error(tmp_path, experiment: dict) -> str:
    with pytest.raises(ConfigError) as error:
        parse_config(tmp_path / "x.yaml", {"experiments": [{"topics": "ikat2023:test", "measures": ["RR"],
                                                            "strategies": ["raw"], **experiment}]})
    return str(error.value)


def test_a_wrong_type_in_a_nested_spec_names_its_key_path(tmp_path):
    rerank = {"name": "rerank", "params": {"model": "m", "first_stage": {"name": "bm25", "params": {"k1": "fast"}}}}
    assert "x.yaml: experiments[0].retrievers[0].params.first_stage.params.k1: expected a number of 0 or more, " \
           "got 'fast'" in _error(tmp_path, {"retrievers": [rerank]})
    fused = {"name": "rrf", "params": {"retrievers": [{"name": "bm25"}, {"name": "dense", "params": {"dtype": 8}}]}}
    assert "experiments[0].retrievers[0].params.retrievers[1].params.dtype: expected one of 'float32', " \
           "'float16', got 8" in _error(tmp_path, {"retrievers": [fused]})
    fused["params"]["retrievers"] = "bm25"
    assert "experiments[0].retrievers[0].params.retrievers: expected a list of 2 or more retriever names or specs" \
        in _error(tmp_path, {"retrievers": [fused]})


def test_a_strategy_argument_of_the_wrong_type_is_refused_when_the_config_is_read(tmp_path):
    message = _error(tmp_path, {"strategies": ["raw", "with_responses:two"], "retrievers": ["bm25"]})
    assert "x.yaml: experiments[0].strategies[1]: with_responses takes 'K' (with_responses[:K]), not 'two': " \
           "K must be an integer of 0 or more" in message
    assert "experiments[0].strategies[0]: ptkb_topk takes 'K' or 'K:METHOD' (ptkb_topk[:K[:METHOD]]), not '-1'" \
        in _error(tmp_path, {"strategies": ["ptkb_topk:-1"], "retrievers": ["bm25"]})
    assert "experiments[0].strategies[0]: unknown PTKB ranking method 'best'" \
        in _error(tmp_path, {"strategies": ["ptkb_topk:3:best"], "retrievers": ["bm25"]})
    assert "experiments[0].strategies[0]: raw takes no argument, not '3'" \
        in _error(tmp_path, {"strategies": ["raw:3"], "retrievers": ["bm25"]})


def test_hqes_background_benchmark_is_loaded_when_the_config_is_read(tmp_path):
    """A misspelt `hqe:BENCHMARK` was found only when the queries were formed, without the key."""
    assert "x.yaml: experiments[0].strategies[1]: unknown benchmark 'cast2091'" \
        in _error(tmp_path, {"strategies": ["raw", "hqe:cast2091"], "retrievers": ["bm25"]})
    assert "x.yaml: experiments[0].strategies[0]: cast2019 has no split 'tset'" \
        in _error(tmp_path, {"strategies": ["hqe:cast2019:tset"], "retrievers": ["bm25"]})


@pytest.fixture
def modules(tmp_path, monkeypatch):
    """Write Python modules into a folder made the current one (as `harness run` starts there);
    forgotten again afterwards."""
    monkeypatch.chdir(tmp_path)
    written = []

    def write(name: str, source: str) -> None:
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        written.append(name)

    yield write
    for name in written:
        sys.modules.pop(name, None)


def test_a_plugin_declared_with_harness_declare_is_checked_by_its_declaration(tmp_path, modules):
    modules("declared_plugins", """
        import harness

        @harness.declare("a fixed ranking, scaled", [harness.Param("weight", float, 1.0, "score multiplier")])
        def scaled(query, k, **params):
            return [("d1", params.get("weight", 1.0))]

        @harness.declare("the last N utterances", [harness.Param("N", int, 2, "how many")])
        def last(conversation, turn_index, n):
            return " ".join(t.utterance for t in conversation.turns[max(0, turn_index - n + 1):turn_index + 1])
        """)
    retriever = {"name": "python:declared_plugins:scaled", "params": {"wieght": 2}}
    assert "experiments[0].retrievers[0].params.wieght: unknown parameter of retriever " \
           "'python:declared_plugins:scaled'; known: weight" in _error(tmp_path, {"retrievers": [retriever]})
    retriever["params"] = {"weight": "heavy"}
    assert "params.weight: expected a number, got 'heavy'" in _error(tmp_path, {"retrievers": [retriever]})
    retriever["params"] = {"weight": 10**400}  # as YAML reads 401 digits: float() of it is an OverflowError
    assert "params.weight: expected a number, got an integer too large for a floating-point number" \
        in _error(tmp_path, {"retrievers": [retriever]})
    assert "experiments[0].strategies[0]: python:declared_plugins:last takes 'N' " \
           "(python:declared_plugins:last[:N]), not 'x'" in _error(
               tmp_path, {"strategies": ["python:declared_plugins:last:x"], "retrievers": ["bm25"]})
    assert RETRIEVERS.declaration("python:declared_plugins:scaled").summary == "a fixed ranking, scaled"
    turns = load("ikat2023:test").conversations[0].turns
    last = STRATEGIES.get("python:declared_plugins:last")
    assert last(load("ikat2023:test").conversations[0], 3, "3").text == " ".join(t.utterance for t in turns[1:4])


def test_a_declaration_naming_a_parameter_the_plugin_does_not_take_is_an_error_when_the_config_is_read(
        tmp_path, modules):
    modules("misdeclared", """
        import harness

        @harness.declare("scaled", [harness.Param("wieght", float, 1.0, "score multiplier")])
        def scaled(query, k, *, weight=1.0):
            return [("d1", weight)]
        """)
    assert "retriever 'python:misdeclared:scaled' declares 'wieght' but takes no such parameter " \
           "(it takes: weight)" in _error(tmp_path, {"retrievers": [{"name": "python:misdeclared:scaled"}]})


def test_a_plugin_strategy_without_a_declaration_takes_the_arguments_of_its_signature(tmp_path, modules):
    modules("signed_strategy", """
        def last(conversation, turn_index, n: int = 2):
            '''The last N utterances.'''
            return " ".join(t.utterance for t in conversation.turns[max(0, turn_index - n + 1):turn_index + 1])
        """)
    declaration = STRATEGIES.declaration("python:signed_strategy:last")
    assert (declaration.summary, _declared(declaration)) == ("The last N utterances.", [("n", 2)])
    assert "signed_strategy:last takes 'n'" in _error(
        tmp_path, {"strategies": ["python:signed_strategy:last:many"], "retrievers": ["bm25"]})


def test_a_plugin_without_a_declaration_describes_its_parameters_in_google_style_docstring_lines(modules):
    """`name: what`, `name (type): what` under `Args:` or not, continued on deeper lines. A line
    naming no parameter (Returns:) describes none."""
    modules("described_plugins", """
        class TfIdf:
            '''TF-IDF over the corpus.

            alpha: idf exponent
            Args:
                min_len (int): the shortest token
                    kept
            '''
            def __init__(self, corpus, alpha: float = 1.0, min_len: int = 1):
                pass

            def search(self, queries, k):
                return {}

        def scaled(query, k, *, scale: float = 1.0, note: str = ""):
            '''Scaled.

            Args:
                scale: score multiplier: above 0
            Returns:
                k: (docid, score) pairs
            '''
        """)
    described = [(p.name, p.desc) for name in ("TfIdf", "scaled")
                 for p in RETRIEVERS.declaration(f"python:described_plugins:{name}").params]
    assert described == [("alpha", "idf exponent"), ("min_len", "the shortest token kept"),
                         ("scale", "score multiplier: above 0"), ("note", "")]


def test_a_strategy_object_brings_its_own_hooks(tmp_path, modules):
    """A plug-in subclassing harness.queries.Strategy: its `check` runs when the config is read."""
    modules("hooked_strategy", """
        from harness.errors import HarnessError
        from harness.queries import Strategy

        class Never(Strategy):
            def query(self, conversation, turn_index):
                return conversation.turns[turn_index].utterance

            def check(self):
                raise HarnessError("never ready")

        never = Never("never", "a strategy whose inputs are never there")
        """)
    assert "experiments[0].strategies[0]: never ready" in _error(
        tmp_path, {"strategies": ["python:hooked_strategy:never"], "retrievers": ["bm25"]})
    assert isinstance(STRATEGIES.get("python:hooked_strategy:never"), Strategy)


def test_a_strategy_objects_check_of_the_topics_runs_when_the_config_is_read(tmp_path, modules):
    """`check_topics`, as the built-in ptkb_topk's: it was left out for a plug-in's object."""
    modules("topical_strategy", """
        from harness.errors import HarnessError
        from harness.queries import Strategy

        class Personal(Strategy):
            def query(self, conversation, turn_index):
                return conversation.turns[turn_index].utterance

            def check_topics(self, conversations):
                if not any(conversation.personal for conversation in conversations):
                    raise HarnessError("these topics have no PTKB")

        personal = Personal("personal", "a strategy reading PTKB statements")
        """)
    assert "experiments[0].strategies[0]: these topics have no PTKB" in _error(
        tmp_path, {"topics": "pragmaticqa:val", "strategies": ["python:topical_strategy:personal"],
                   "retrievers": ["bm25"]})


def test_a_strategy_objects_notes_are_said_when_its_stream_is_built(modules, capsys):
    """`notes`, as the built-in variant's fallback count: a plug-in's object says its own."""
    modules("noting_strategy", """
        from harness.queries import Strategy

        class Shouting(Strategy):
            def query(self, conversation, turn_index):
                return conversation.turns[turn_index].utterance.upper()

            def notes(self, conversations):
                return [f"{len(conversations)} conversations shouted"]

        shouting = Shouting("shouting", "the utterance in capitals")
        """)
    from harness.queries import stream

    list(stream(load("cast2019").conversations, "python:noting_strategy:shouting"))
    said = capsys.readouterr().err
    assert said == "note: query strategy 'python:noting_strategy:shouting': 50 conversations shouted\n"


def test_a_python_benchmark_is_named_with_its_split(modules):
    modules("my_benchmark", """
        from harness.topics import Benchmark, Conversation, Turn

        def topics(split=None):
            return Benchmark(f"mine:{split or 'all'}", (Conversation("c", (Turn("c_1", "hello"),)),))
        """)
    assert load("python:my_benchmark:topics:test").name == "mine:test"
    assert load("python:my_benchmark:topics").name == "mine:all"


def test_a_python_benchmarks_declared_fields_are_found_by_its_spec_with_a_split(modules):
    """`compare --group-field` checks a field against a `python:` benchmark's own declaration."""
    from harness.topics import check_field

    modules("fielded_benchmark", """
        from harness import Param, declare
        from harness.topics import Benchmark, Conversation, Turn

        @declare("a benchmark with one turn field", splits=("test",), fields=(Param("intent", str, desc="why"),))
        def topics(split=None):
            return Benchmark(f"mine:{split or 'test'}", (Conversation("c", (Turn("c_1", "hello"),)),))
        """)
    check_field("python:fielded_benchmark:topics:test", "intent", "--group-field")
    with pytest.raises(HarnessError, match="declared: intent"):
        check_field("python:fielded_benchmark:topics:test", "genre", "--group-field")


def test_a_python_judge_is_made_with_its_declared_arguments(modules):
    from harness.responses.judges import make_judge

    modules("my_judge", """
        from harness.judge.scales import SUPPORT_0_2

        class Strict:
            '''Supports nothing below a threshold.'''
            name, scale = "strict", SUPPORT_0_2

            def __init__(self, threshold: float = 0.5):
                self.threshold = threshold

            def judge(self, items, progress=False):
                return []

            def provenance(self):
                return {}
        """)
    assert make_judge("python:my_judge:Strict:0.9").threshold == 0.9
    assert make_judge("python:my_judge:Strict").threshold == 0.5
    with pytest.raises(HarnessError, match=r"python:my_judge:Strict takes 'threshold' .*not 'high'"):
        make_judge("python:my_judge:Strict:high")
    from argparse import Namespace

    from harness.judge.cli_judge import make_judge as relevance_judge  # `harness judge --judge`

    made = relevance_judge(Namespace(judge="python:my_judge:Strict:0.8", llm_options_given=[], labels=None, scale=None))
    assert made.threshold == 0.8
    with pytest.raises(HarnessError, match="minilm judges support"):
        relevance_judge(Namespace(judge="minilm", llm_options_given=[], labels=None, scale=None))
