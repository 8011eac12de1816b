"""The kinds a research team plugs in without editing harness, beyond retrievers, strategies,
benchmarks and judges: measure presets, scales, response formats, nugget-bank formats and
corpus formats, each through its entry-point group (`harness.presets`, ...).

The plug-in package is installed as pip installs one (a dist-info folder, found by
importlib.metadata, on the PYTHONPATH of the harness run as a user runs it), as
tests/test_plugins.py installs its broken ones; nothing is installed into the shared venv.
"""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import harness
from harness.errors import HarnessError
from harness.evaluate.presets import Preset
from harness.responses.model import Nugget, NuggetBank, Response, ResponseRun, Sentence
from harness.responses.nuggets import BANKS, read_bank
from harness.responses.readers import FORMATS, read_responses

MODULE = '''
"""Our lab's own protocol, scale and file formats."""
import hashlib

from harness.corpus import Corpus, Document
from harness.corpus.readers import CorpusFormat
from harness.evaluate.presets import Preset
from harness.judge.scales import Scale
from harness.responses.model import Nugget, NuggetBank, Response, ResponseRun, Sentence

shallow = Preset(measures=("P@1", "RR"), depth=None, source="Our lab's shallow protocol: the top passage. Notes.")
lab_scale = Scale("lab-0-2", (0, 1, 2), ("off topic", "partly", "answers"))


def read_tsv(path):
    """Our lab's responses: `turn TAB run TAB text` lines."""
    runs = {}
    for line in path.read_text().splitlines():
        turn, run, text = line.split("\\t")
        runs.setdefault(run, {})[turn] = Response(turn, text, (Sentence(text),))
    return [ResponseRun(run, path, "lab-tsv", responses) for run, responses in runs.items()]


def read_bank(path, vital_grade):
    """Our lab's nuggets: `turn TAB nugget text` lines, all vital."""
    nuggets = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        turn, text = line.split("\\t")
        nuggets[turn] = (*nuggets.get(turn, ()), Nugget(str(number), text, 1, True))
    return NuggetBank(path.name, nuggets, "every nugget vital")


def open_tsv(spec):
    """Our lab's passages: `id TAB text` lines."""
    def documents():
        with open(spec) as handle:
            for line in handle:
                docid, text = line.rstrip("\\n").split("\\t")
                yield Document(docid, text)
    return Corpus(spec, documents, known_fingerprint=hashlib.sha256(open(spec, "rb").read()).hexdigest())


lab_corpus = CorpusFormat(open=open_tsv, claims=lambda spec: False)


def lab_bench(split=None):
    """Our lab's topics, searched in our passages."""
    from harness.topics import Benchmark, Conversation, Turn

    return Benchmark("lab-bench", (Conversation("c", (Turn("c_1", "capital"),)),), corpus=open_tsv("passages.tsv"))


class ListedFirst:
    """Each turn's PTKB statements in the order the user gave them."""

    def __init__(self, conversations, top: int = 2):
        self.top = top

    def rank(self, turns):
        from harness.trec import Run

        return Run.of({conversation.turns[index].qid: [(statement.id, float(-rank)) for rank, statement
                                                       in enumerate(conversation.personal[:self.top])]
                       for conversation, index in turns})


def not_a_reader():
    return []


def by_turn(path):
    return {"1_1": "Paris"}


def graded_as_text(path, vital_grade):
    return NuggetBank(path.name, {"1_1": (Nugget("1", "the capital is Paris", "3", True),)}, "as written")
'''

ENTRY_POINTS = """[harness.presets]
shallow = lab_plugin:shallow
[harness.scales]
lab-0-2 = lab_plugin:lab_scale
not-a-scale = lab_plugin:shallow
[harness.response_formats]
lab-tsv = lab_plugin:read_tsv
wrong = lab_plugin:not_a_reader
by-turn = lab_plugin:by_turn
[harness.nugget_banks]
lab-tsv = lab_plugin:read_bank
graded-as-text = lab_plugin:graded_as_text
[harness.ptkb_methods]
listed-first = lab_plugin:ListedFirst
[harness.corpus_formats]
labtsv = lab_plugin:lab_corpus
[harness.benchmarks]
lab-bench = lab_plugin:lab_bench
"""


@pytest.fixture
def installed(tmp_path, monkeypatch) -> Path:
    """lab-plugin 0.3 installed: a dist-info folder and its module on the PYTHONPATH; the current folder."""
    site = tmp_path / "site"
    (site / "lab_plugin-0.3.dist-info").mkdir(parents=True)
    (site / "lab_plugin-0.3.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: lab-plugin\n"
                                                                "Version: 0.3\n")
    (site / "lab_plugin-0.3.dist-info" / "entry_points.txt").write_text(ENTRY_POINTS)
    (site / "lab_plugin.py").write_text(MODULE)
    monkeypatch.setenv("PYTHONPATH", f"{Path(harness.__file__).parents[1]}{os.pathsep}{site}")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "import sys; from harness.cli import main; sys.exit(main())", *args],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("kind, name, summary", [
    ("preset", "shallow", "Our lab's shallow protocol: the top passage."),
    ("scale", "lab-0-2", "lab-0-2 (0 to 2)"),
    ("response-format", "lab-tsv", "Our lab's responses: `turn TAB run TAB text` lines."),
    ("nugget-bank", "lab-tsv", "Our lab's nuggets: `turn TAB nugget text` lines, all vital."),
    ("corpus-format", "labtsv", "Our lab's passages: `id TAB text` lines."),
    ("ptkb-method", "listed-first", "Each turn's PTKB statements in the order the user gave them."),
])
def test_an_installed_plugin_of_each_kind_is_listed_with_its_package(installed, kind, name, summary):
    done = _harness("components", kind, name)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == f"  {name:<20} {summary}  [lab-plugin]"


@pytest.mark.parametrize("name", ["shallow", "python:lab_plugin:shallow"])  # its entry point's name, or none
def test_a_plugin_preset_scores_by_name_in_eval_and_in_a_config(installed, name):
    (installed / "qrels").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n")
    (installed / "a.run").write_text("1 Q0 d2 1 2.0 a\n1 Q0 d1 2 1.0 a\n2 Q0 d3 1 1.0 a\n")
    done = _harness("eval", "--qrels", "qrels", "--preset", name, "a.run", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"a": {"P@1": 0.5, "RR": 0.75}}
    (installed / "c.yaml").write_text("output: runs\nexperiments:\n  - topics: ikat2023:test\n    strategies: [raw]\n"
                                      f"    retrievers: [bm25]\n    preset: {name}\n")
    done = _harness("run", "c.yaml", "--dry-run")
    assert done.returncode == 0, done.stderr


BAD_LAB = '''
"""Another lab's presets, one off its type, one naming a name lab-plugin has."""
from harness.evaluate.presets import Preset

negative = Preset(measures=("nDCG@3",), depth=-5, source="Scored to a negative depth.")
deep = Preset(measures=("nDCG@3",), depth=1000, source="Our shallow, made deep.")
'''


@pytest.fixture
def bad_lab(installed) -> Path:
    """bad-lab 0.1 installed beside lab-plugin: its presets `negative` (depth -5), `gone` (no such attribute)
    and `shallow` (lab-plugin's name too)."""
    site = installed / "site"
    (site / "bad_lab-0.1.dist-info").mkdir()
    (site / "bad_lab-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-lab\nVersion: 0.1\n")
    (site / "bad_lab-0.1.dist-info" / "entry_points.txt").write_text(
        "[harness.presets]\nnegative = bad_lab:negative\ngone = bad_lab:MISSING\nshallow = bad_lab:deep\n")
    (site / "bad_lab.py").write_text(BAD_LAB)
    (installed / "qrels").write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n")
    (installed / "a.run").write_text("1 Q0 d2 1 2.0 a\n1 Q0 d1 2 1.0 a\n2 Q0 d3 1 1.0 a\n")
    (installed / "b.run").write_text("1 Q0 d1 1 2.0 b\n2 Q0 d3 1 1.0 b\n")
    return installed


@pytest.mark.parametrize("fields, problem", [
    ({"depth": -5}, "depth must be a positive number of documents, not -5"),
    ({"depth": 0}, "depth must be a positive number of documents, not 0"),
    ({"depth": "100"}, "depth must be a positive number of documents, not '100'"),
    ({"measures": "nDCG@3"}, "measures must be a non-empty tuple of measure names such as ('nDCG@10', 'RR'), "
                             "not 'nDCG@3'"),
    ({"measures": ()}, "measures must be a non-empty tuple of measure names such as ('nDCG@10', 'RR'), not ()"),
    ({"measures": ("nDGC@5",)}, "measures: cannot read measure 'nDGC@5': no such measure; nearest valid name: nDCG@5"),
    ({"source": None}, "source must be text saying where the convention comes from, not None"),
    ({"passage_separator": " "}, "passage_separator must be the character(s) between a document id and its passage "
                                 "number, such as '-' or ':', not ' '"),
], ids=["depth -5", "depth 0", "depth '100'", "measures a str", "no measures", "a misspelt measure", "no source",
        "a blank separator"])
def test_a_plugin_presets_field_off_its_type_is_refused_when_named_saying_which(tmp_path, monkeypatch, fields,
                                                                                   problem):
    """As the flag standing for it would be: a depth of -5 scored every run 0 (and blamed the qrels), "100" was
    a traceback, measures "nDCG@3" were read letter by letter and none made an empty board."""
    module = f"lab_{tmp_path.name}"
    given = {"measures": ("nDCG@3",), "depth": 100, "source": "Ours.", **fields}
    (tmp_path / f"{module}.py").write_text(f"from harness.evaluate.presets import Preset\nours = Preset(**{given!r})\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(HarnessError) as raised:
        harness.evaluate("a.run", "qrels", preset=f"python:{module}:ours")
    assert str(raised.value) == f"measure preset 'python:{module}:ours': {problem}"


def test_a_preset_object_handed_to_the_python_api_is_one_line_saying_how_to_name_it():
    """preset= takes names, as --preset and a config's preset: do; a Preset itself was an AttributeError."""
    with pytest.raises(HarnessError, match=r"^preset takes a preset's name \(a built-in's, an entry point's or a "
                                           r"python:module:attr spec\), not a Preset: name your Preset by its module"):
        harness.evaluate("a.run", "qrels", preset=Preset(("nDCG@3",), 10, "Ours."))


def test_a_plugin_presets_bad_field_is_one_line_naming_it_its_package_and_the_field_wherever_it_is_named(bad_lab):
    said = ("measure preset 'negative': depth must be a positive number of documents, not -5 (entry point "
            "bad_lab:negative of bad-lab 0.1)")
    for command in (["eval", "a.run"], ["compare", "a.run", "b.run"]):
        done = _harness(*command, "--qrels", "qrels", "--preset", "negative")
        assert done.returncode == 2 and done.stderr == (f"harness {command[0]}: error: argument --preset: {said} "
                                                        f"(`harness {command[0]} --help` lists the options)\n")
    (bad_lab / "c.yaml").write_text("output: runs\nexperiments:\n  - topics: ikat2023:test\n    strategies: [raw]\n"
                                    "    retrievers: [bm25]\n    preset: negative\n")
    done = _harness("run", "c.yaml", "--dry-run")
    assert done.returncode == 2 and done.stderr.endswith(f"c.yaml: experiments[0].preset: {said}\n"), done.stderr
    done = _harness("components", "preset", "negative")
    assert done.returncode == 2 and done.stderr == f"harness components: error: {said}\n"
    done = _harness("components", "preset")
    assert done.returncode == 1 and f"  {'negative':<20} BROKEN: {said.partition(': ')[2]}" in done.stdout.splitlines()


@pytest.mark.parametrize("command, scored", [(["eval"], ["a.run", "--qrels", "qrels"]),
                                             (["compare"], ["a.run", "b.run", "--qrels", "qrels"]),
                                             (["qrels", "rank-agree"], ["qrels", "qrels", "a.run", "b.run"])])
def test_a_preset_entry_point_that_cannot_be_loaded_or_is_claimed_twice_is_broken_for_its_name_alone(bad_lab, command,
                                                                                                     scored):
    """README, entry points: "listed as BROKEN: ..., the others listed still". --help, which lists every preset with
    its measures, was a traceback with one such package installed, whatever preset (or none) was asked."""
    done = _harness(*command, "--help")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    text = " ".join(done.stdout.split())
    assert "gone: BROKEN: cannot load the entry point bad_lab:MISSING of bad-lab 0.1 (AttributeError: module " \
           "'bad_lab' has no attribute 'MISSING');" in text
    assert "shallow: BROKEN: measure preset 'shallow' is registered twice, by the entry points of " in text
    assert "negative: BROKEN: depth must be a positive number of documents, not -5 " in text
    assert "ptkb: nDCG@3 P@3 R@3 RR;" in text
    done = _harness(*command, *scored, "--preset", "gone")
    assert done.returncode == 2 and done.stderr.startswith(
        f"harness {' '.join(command)}: error: argument --preset: measure preset 'gone': cannot load ") \
        and len(done.stderr.splitlines()) == 1, done.stderr
    done = _harness(*command, *scored, "--preset", "ptkb")
    assert done.returncode == 0, done.stderr


def test_a_broken_preset_entry_point_leaves_the_passage_id_advice_naming_the_presets_that_load(bad_lab):
    """The advice for passage ids names the presets reading them so; it looked every preset up, a broken one's
    error taking the place of the scores."""
    (bad_lab / "p.run").write_text("1 Q0 d1-1 1 2.0 p\n1 Q0 d2-1 2 1.0 p\n2 Q0 d3-1 1 1.0 p\n")
    done = _harness("eval", "p.run", "--qrels", "qrels", "--measures", "nDCG@3")
    assert done.returncode == 0, done.stderr
    assert "judge documents by their best passage with --passage-separator '-' (the preset cast2021 sets it)" \
           in done.stderr


def test_a_python_spec_names_a_ptkb_method_as_it_names_a_retriever(installed):
    """`python:module:attr`, no entry point, in a ptkb experiment's retrievers: (a preset's: above)."""
    (installed / "c.yaml").write_text("output: runs\nexperiments:\n  - task: ptkb\n    topics: ikat2023:test\n"
                                      "    retrievers: [{name: 'python:lab_plugin:ListedFirst', params: {top: 3}}]\n")
    done = _harness("run", "c.yaml", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "ikat2023-test.ptkb.python-lab_plugin-ListedFirst\t332 queries" in done.stdout


def _lab_responses(folder: Path) -> None:
    """answers.tsv and nuggets.tsv in the lab's formats, and the assignments judging them."""
    (folder / "answers.tsv").write_text("1_1\tmine\tParis is the capital.\n")
    (folder / "nuggets.tsv").write_text("1_1\tthe capital is Paris\n")
    (folder / "assigned.jsonl").write_text(json.dumps({"qid": "1_1", "run_id": "mine",
                                                       "nuggets": [{"assignment": "support"}]}) + "\n")


@pytest.mark.parametrize("responses, nuggets", [("lab-tsv", "lab-tsv"),  # their entry points' names, or none
                                                ("python:lab_plugin:read_tsv", "python:lab_plugin:read_bank")])
def test_a_plugin_response_format_and_nugget_bank_format_are_read_by_name(installed, responses, nuggets):
    _lab_responses(installed)
    done = _harness("responses", "eval", "answers.tsv", "--response-format", responses, "--nuggets", "nuggets.tsv",
                    "--nuggets-format", nuggets, "--judge", "assignments:assigned.jsonl", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "mine" in done.stdout and "every nugget vital" in done.stdout


@pytest.mark.parametrize("responses, nuggets", [("lab-tsv", "lab-tsv"),
                                                ("python:lab_plugin:read_tsv", "python:lab_plugin:read_bank")])
def test_the_python_api_reads_responses_and_nuggets_in_a_plugin_format_it_names(installed, responses, nuggets):
    """As --response-format and --nuggets-format: response_format= and nuggets_format= (serve's key's name)."""
    _lab_responses(installed)
    probe = ("from harness.responses import evaluate; "
             f"_, aggregate = evaluate('answers.tsv', 'nuggets.tsv', 'assignments:assigned.jsonl', "
             f"response_format={responses!r}, nuggets_format={nuggets!r}); print(list(aggregate['run']))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout == "['mine']\n", done.stderr


def test_a_plugin_ptkb_method_ranks_by_name_with_its_parameters_and_keys_its_runs(installed):
    """Its parameters after the conversations are a config's; its package's version is in the run's resume key."""
    (installed / "c.yaml").write_text("output: runs\nexperiments:\n  - task: ptkb\n    topics: ikat2023:test\n"
                                      "    retrievers: [{name: listed-first, params: {top: 3}}]\n")
    done = _harness("run", "c.yaml")
    assert done.returncode == 0, done.stderr
    lines = (installed / "runs" / "ikat2023-test.ptkb.listed-first.run").read_text().splitlines()
    assert {line.split()[3] for line in lines} == {"1", "2", "3"}
    record = json.loads((installed / "runs" / "ikat2023-test.ptkb.listed-first.json").read_text())
    origin = json.loads(record["hashes"]["plugins"])["ptkb method listed-first"]
    assert (origin["entry_point"], origin["distribution"]) == ("harness.ptkb_methods:listed-first", "lab-plugin")
    (installed / "c.yaml").write_text("output: runs\nexperiments:\n  - task: ptkb\n    topics: ikat2023:test\n"
                                      "    retrievers: [{name: listed-first, params: {depth: 3}}]\n")
    done = _harness("run", "c.yaml", "--dry-run")
    assert done.returncode == 2 and "depth" in done.stderr.splitlines()[-1], done.stderr


def test_an_installed_preset_is_shown_with_what_it_computes_and_its_whole_source(installed):
    done = _harness("components", "preset", "shallow")
    assert done.returncode == 0 and done.stdout.splitlines()[2:] == [
        f"  {'':<22}computes: P@1 RR", f"  {'':<22}source: Our lab's shallow protocol: the top passage. Notes."]


def test_a_plugin_corpus_format_and_scale_are_found_by_name(installed):
    (installed / "passages.tsv").write_text("p1\tParis is the capital.\n")
    probe = ("from harness.corpus.readers import open_corpus; from harness.judge.scales import SCALES; "
             "print([d.id for d in open_corpus('labtsv:passages.tsv').documents()], SCALES.get('lab-0-2').labels)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout == "['p1'] (0, 1, 2)\n", done.stderr


def _fingerprints_around_a_reader_change(installed: Path, corpus: str) -> tuple[str, str]:
    """The fingerprint of the corpus the expression `corpus` gives, printed by a fresh process before
    and after lab_plugin's reader is changed to cut each passage short (the passages file the same)."""
    (installed / "passages.tsv").write_text("p1\tParis is the capital.\n")
    probe = ("from harness.corpus.readers import open_corpus; from harness.topics import load; "
             f"print({corpus}.fingerprint)")
    before = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    module = installed / "site" / "lab_plugin.py"
    module.write_text(module.read_text().replace("yield Document(docid, text)", "yield Document(docid, text[:5])"))
    after = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert len(before.stdout) == 65 and after.stdout, before.stderr + after.stderr
    return before.stdout, after.stdout


def test_a_plugin_corpus_formats_code_keys_its_corpus_as_its_file_does(installed):
    """The fingerprint keys the corpus's index, embeddings and runs: a reader changed (each passage cut
    short) makes them anew, though its known_fingerprint, the file's sha256, is the same."""
    before, after = _fingerprints_around_a_reader_change(installed, "open_corpus('labtsv:passages.tsv')")
    assert after != before


@pytest.mark.parametrize("spec", ["lab-bench", "python:lab_plugin:lab_bench"])
def test_a_plugin_benchmarks_code_keys_the_corpus_it_brings_as_its_file_does(installed, spec):
    """As a corpus format's: its reader changed makes the corpus's index and runs anew, though the
    corpus's known_fingerprint, the file's sha256, is the same."""
    before, after = _fingerprints_around_a_reader_change(installed, f"load({spec!r}).corpus")
    assert after != before


def test_a_plugin_benchmark_whose_corpus_a_plugin_format_reads_is_keyed_by_both(installed):
    """Our topics in our own module, our passages read by our lab package's format: that format's
    code still keys the corpus, though the benchmark's own code is another's."""
    (installed / "our_topics.py").write_text(
        "from harness.corpus.readers import open_corpus\nfrom harness.topics import Benchmark, Conversation, Turn\n\n\n"
        "def topics(split=None):\n    return Benchmark('ours', (Conversation('c', (Turn('c_1', 'capital'),)),), "
        "corpus=open_corpus('labtsv:passages.tsv'))\n")
    before, after = _fingerprints_around_a_reader_change(installed, "load('python:our_topics:topics').corpus")
    assert after != before


def test_a_plugin_corpus_format_capturing_a_compiled_pattern_keys_its_corpus_alike_in_every_process(installed):
    """A value its code captures (a compiled pattern) is no plain one: keyed by it, the corpus had a
    new fingerprint in every process, its index and embeddings made again at every run."""
    (installed / "passages.tsv").write_text("p1\tParis is the capital.\n")
    module = installed / "site" / "lab_plugin.py"
    text = module.read_text()
    made = "lab_corpus = CorpusFormat(open=open_tsv, claims=lambda spec: False)"
    assert made in text
    module.write_text(text.replace(made, "import re\n\n\ndef _made():\n    tab = re.compile('\\t')\n\n"
                                         "    def open_split(spec):\n        assert tab.pattern\n"
                                         "        return open_tsv(spec)\n\n"
                                         "    return CorpusFormat(open=open_split, claims=lambda spec: False)\n\n\n"
                                         "lab_corpus = _made()"))
    probe = "from harness.corpus.readers import open_corpus; print(open_corpus('labtsv:passages.tsv').fingerprint)"
    made = [subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120) for _ in "ab"]
    assert len(made[0].stdout) == 65 and made[0].stdout == made[1].stdout, made[0].stderr + made[1].stderr


def test_a_plugin_corpus_format_raising_shows_its_own_frames_and_a_line_naming_it(installed):
    """Its entry point names a CorpusFormat, a harness class: the module it is loaded from is the plug-in's."""
    done = _harness("index", "labtsv:missing.tsv", "--output", "idx")
    assert done.returncode == 2 and done.stderr.startswith("Traceback of the plug-in's code"), done.stderr
    assert "harness/" not in done.stderr and done.stderr.splitlines()[-1].startswith(
        "harness index: error: corpus format 'labtsv' (entry point lab_plugin:lab_corpus of lab-plugin 0.3) raised "
        "FileNotFoundError: "), done.stderr


def test_a_plugin_corpus_format_raising_is_named_though_a_preset_of_its_package_was_loaded_after_it(installed):
    """A preset runs no code of its package: failures in that package are not its."""
    (installed / "passages.tsv").write_text("p1\tParis is the capital.\n")
    probe = ("import os; from harness.corpus.readers import open_corpus; from harness.evaluate.presets import PRESETS; "
             "from harness.registry import plugin_failure; corpus = open_corpus('labtsv:passages.tsv'); "
             "PRESETS.get('shallow'); os.remove('passages.tsv')\n"
             "try:\n    list(corpus.documents())\nexcept OSError as error:\n    print(plugin_failure(error)[1])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.startswith("corpus format 'labtsv' (entry point lab_plugin:lab_corpus of lab-plugin 0.3) "
                                  "raised FileNotFoundError"), done.stdout + done.stderr


def test_a_corpus_format_name_two_packages_register_is_an_error_only_where_it_is_named(installed):
    other = installed / "site" / "other_lab-0.1.dist-info"
    other.mkdir()
    (other / "METADATA").write_text("Metadata-Version: 2.1\nName: other-lab\nVersion: 0.1\n")
    (other / "entry_points.txt").write_text("[harness.corpus_formats]\nlabtsv = lab_plugin:lab_corpus\n")
    done = _harness("index", "typo.jsonl", "--output", "idx")
    assert done.returncode == 2 and done.stderr.startswith(
        "harness index: error: corpus 'typo.jsonl' is neither an existing file nor a spec starting with "), done.stderr
    done = _harness("index", "labtsv:passages.tsv", "--output", "idx")
    assert done.returncode == 2 and "corpus format 'labtsv' is registered twice" in done.stderr, done.stderr


def test_a_plugin_of_the_wrong_shape_is_broken_naming_what_it_should_be_and_its_package(installed):
    done = _harness("components", "response-format")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    [line] = [line for line in done.stdout.splitlines() if line.startswith("  wrong ")]
    assert line.split(None, 1)[1] == ("BROKEN: not_a_reader cannot be called as f(path); expected a function f(path) "
                                      "-> a list of harness.responses.model.ResponseRun (entry point "
                                      "lab_plugin:not_a_reader of lab-plugin 0.3)")
    (installed / "answers.json").write_text("{}")
    done = _harness("responses", "eval", "answers.json", "--response-format", "by-turn", "--nuggets", "n.json",
                    "--judge", "minilm")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == ("harness responses eval: error: response format 'by-turn' (package "
                                            "lab-plugin 0.3) answered dict; expected a list of "
                                            "harness.responses.model.ResponseRun")


def test_a_plugin_bank_answering_a_record_off_the_model_is_one_line_naming_its_package_and_the_record(installed):
    """A grade "3", as a JSON or TSV reader leaves it, was a TypeError from the harness's code comparing it."""
    (installed / "answers.tsv").write_text("1_1\tmine\tParis is the capital.\n")
    (installed / "nuggets.tsv").write_text("anything")
    done = _harness("responses", "eval", "answers.tsv", "--response-format", "lab-tsv", "--nuggets", "nuggets.tsv",
                    "--nuggets-format", "graded-as-text", "--judge", "minilm")
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.splitlines()[-1] == ("harness responses eval: error: nugget bank format 'graded-as-text' "
                                            "(package lab-plugin 0.3) answered turn '1_1', nuggets[0]: grade '3' "
                                            "(str); expected a whole number of 0 or more")


def test_a_scale_plugin_that_cannot_be_loaded_is_broken_where_listed_and_no_error_in_a_warning_about_scales(
        installed):
    """The warning on a labels file's scale against the reference's top grade names the scales that fit: it
    looked every scale up, and a broken one made the warning an error."""
    done = _harness("components", "scale")
    broken = ("  not-a-scale          BROKEN: got Preset; expected a harness.judge.scales.Scale "
              "(entry point lab_plugin:shallow of lab-plugin 0.3)")
    assert done.returncode == 1 and broken in done.stdout.splitlines()
    probe = ("from harness.judge.fill import scale_warning; from harness.trec import Qrels; "
             "print(scale_warning(Qrels('h', {'1': {'d': 4}}), 'x', {'scale': 'yes-no', 'matches_file': True}, 'u'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.endswith("judge with --scale relevance-0-4\n"), done.stderr


def _answering(response: object) -> Callable[[Path], list[ResponseRun]]:
    return lambda path: [ResponseRun("r", path, "mine", {"1_1": response})]


@pytest.mark.parametrize("response, said", [
    ("Paris", "turn '1_1': the response 'Paris' (str); expected a harness.responses.model.Response"),
    (Response("1_1", None), "turn '1_1': text None (NoneType); expected a string"),
    (Response("1_2", "Paris"), "turn '1_1': turn '1_2' (str); expected its key '1_1'"),  # was scored under 1_1
    (Response("1_1", "Paris", ("Paris",)), "turn '1_1': sentences ('Paris',) (tuple); expected a tuple of "
                                           "harness.responses.model.Sentence"),
    (Response("1_1", "Paris", (Sentence("Paris", "p1"),)), "turn '1_1', sentences[0]: citations 'p1' (str); "
                                                          "expected a tuple of passage ids (strings)"),
    (Response("1_1", "Paris", dropped=-1), "turn '1_1': dropped -1 (int); expected a count (0 or more)"),
])
def test_a_plugin_response_format_answering_a_record_off_the_model_is_one_line_naming_the_record(
        tmp_path, response, said):
    """Each was a traceback from the harness's code reading it (AttributeError: 'str' object has no attribute ...)."""
    (tmp_path / "answers").write_text("")
    with FORMATS.using({"mine": _answering(response)}), pytest.raises(HarnessError) as raised:
        read_responses(tmp_path / "answers", "mine")
    assert str(raised.value) == f"response format 'mine' answered run 'r', {said}"


def _bank(*nuggets: object) -> Callable[[Path, int], NuggetBank]:
    return lambda path, vital_grade: NuggetBank("b", {"1_1": nuggets}, "as given", vital_grade)


@pytest.mark.parametrize("nuggets, said", [
    ((Nugget("1", "Paris", "3", True),), ", nuggets[0]: grade '3' (str); expected a whole number of 0 or more"),
    ((Nugget("1", "Paris", 2, True), Nugget("1", "Lyon", 1, False)),  # its judgment is keyed by the id
     ", nuggets[1]: id '1' (str); expected an id given once in the turn (it keys the judgment)"),
    ((Nugget(1, "Paris", 2, True),), ", nuggets[0]: id 1 (int); expected a string"),
    ((Nugget("1", None, 2, True),), ", nuggets[0]: text None (NoneType); expected a non-blank string"),
    ((Nugget("1", "Paris", 2, "yes"),), ", nuggets[0]: vital 'yes' (str); expected True or False"),
    (("Paris",), ": nuggets ('Paris',) (tuple); expected a tuple of harness.responses.model.Nugget"),
])
def test_a_plugin_bank_answering_a_record_off_the_model_is_one_line_naming_the_record(tmp_path, nuggets, said):
    (tmp_path / "nuggets").write_text("")
    with BANKS.using({"mine": _bank(*nuggets)}), pytest.raises(HarnessError) as raised:
        read_bank(tmp_path / "nuggets", "mine")
    assert str(raised.value) == f"nugget bank format 'mine' answered turn '1_1'{said}"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation but - and _ dropped, spaces made -."""
    return "".join(c for c in heading.strip().lower() if c.isalnum() or c in " -_").replace(" ", "-")


def test_the_readme_says_for_each_newly_opened_plugin_kind_what_it_is_handed_and_answers_and_where_more_is_said():
    """One row per entry-point group beyond retrievers, strategies and benchmarks, each linking to a heading."""
    readme = (Path(harness.__file__).parents[1] / "README.md").read_text()
    groups = set(re.findall(r"^\| `(harness\.\w+)` \|", readme, re.M))  # the table of entry-point groups
    table = readme.split("### Plug-in kinds: what each is handed and answers\n", 1)[1].split("\n\n#", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and "(`harness." in line]
    assert {re.search(r"\(`(harness\.\w+)`\)", row)[1] for row in rows} == groups - {
        "harness.retrievers", "harness.strategies", "harness.benchmarks"}
    headings = {_slug(line.lstrip("#")) for line in readme.splitlines() if re.match(r"#+ ", line)}
    for row in rows:
        assert all(anchor in headings for anchor in re.findall(r"\]\(#([\w-]+)\)", row)), row
        assert re.findall(r"\]\(#([\w-]+)\)", row), row
