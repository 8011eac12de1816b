"""The `harness` command. Each subcommand lives in its own module and is imported only
when it runs, so `harness eval` never pays for pyserini or torch.

One convention for every subcommand (README, "Command-line conventions"): run files are
positional arguments (`--run` is kept as an alias), and the file or folder a command writes
is `--output` (`--out` is kept as an alias). The helpers below declare both."""

from __future__ import annotations

import argparse
import codecs
import importlib
import io
import os
import re
import signal
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from harness.errors import HarnessError, InputError, open_input
from harness.registry import Registry, UnknownName, number_problem

DESCRIPTION = ("A TREC-style evaluation harness for conversational search and recommendation: run benchmark "
               "configs, score and compare runs as trec_eval does, and write, check and host TREC iKAT submissions.")

# subcommand -> (module defining `add_arguments(parser)` and `run(args) -> int`, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "eval": ("harness.evaluate.cli", "score TREC runs against qrels (trec_eval conventions)"),
    "topics": ("harness.topics.cli", "list benchmarks and export their query streams"),
    "segment": ("harness.corpus.cli_segment", "split documents into official iKAT/TREC DL passages"),
    "encode": ("harness.scale.cli_encode", "encode passages into sharded embedding files (local or on Ray)"),
    "index": ("harness.retrieve.cli_index", "build a Lucene index with Anserini"),
    "run": ("harness.runner.cli", "run a benchmark config: topics -> queries -> runs -> scores"),
    "components": ("harness.runner.cli_components", "list benchmarks, strategies, retrievers, ... (plug-ins too)"),
    "compare": ("harness.report.cli_compare", "leaderboard of runs with significance tests"),
    "arena": ("harness.report.cli_arena", "Elo / Bradley-Terry ratings from pairwise votes"),
    "ikat": ("harness.ikat.cli", "write, validate and convert TREC iKAT submissions"),
    "responses": ("harness.responses.cli", "score generated responses: nuggets and citation support"),
    "serve": ("harness.serve.cli_serve", "host a leaderboard: teams submit runs, scored against hidden qrels"),
    "submit": ("harness.serve.cli_submit", "upload a run to a leaderboard server"),
    "judge": ("harness.judge.cli_judge", "label the unjudged pairs in runs' top k with an LLM, reproducibly"),
    "qrels": ("harness.judge.cli_qrels", "agreement of two qrels: kappa on shared pairs, tau / tau_AP of run orderings"),
}


def add_runs(parser: argparse.ArgumentParser, help_text: str = "TREC run files", least: int = 1) -> None:
    """Run files as positional arguments, and `--run` as an alias (older spelling). None is a
    usage error, said by `_parser` in the words the command's own check for fewer than `least`
    uses (`no_runs`): rank-agree orders two or more, and says so alike for none and for one
    (counted as it runs: a parse-only check cannot count what a shell glob gives)."""
    parser.least_runs = least  # type: ignore[attr-defined]  # read by _parser, which argparse's Namespace is not
    parser.add_argument("runs", nargs="*", metavar="RUN", help=help_text)
    parser.add_argument("--run", dest="run_alias", nargs="+", action="extend", default=[], metavar="RUN",
                        help=argparse.SUPPRESS)


def runs(args: argparse.Namespace) -> list[str]:
    """The run files given, positional first (none is a usage error, said by `_parser`)."""
    return [*args.runs, *args.run_alias]


def distinct_runs(args: argparse.Namespace) -> list[str]:
    """The run files given (`runs`), refused before any is scored where two share a name (the
    file name less its suffix, which names a run in the scores): said naming both files."""
    from harness.trec import file_stem, refuse_shared_names

    files = runs(args)
    refuse_shared_names([file_stem(path) for path in files], files)
    return files


NO_RUNS = "give at least one run file"


def no_runs(least: int) -> str:
    """The usage error for fewer run files than a command needs."""
    return NO_RUNS if least == 1 else f"give at least {least} run files"


def number_in(low: float, high: float, *, whole: bool = False, open_low: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number (a whole one with `whole`) from low to high, else a
    usage error saying so (not a traceback, not a NaN carried into every result)."""

    def parse(text: str) -> float:
        try:
            value = int(text) if whole else float(text)
        except ValueError:
            value = None
        if problem := number_problem(value, low, high, whole=whole, open_low=open_low):
            raise argparse.ArgumentTypeError(f"{problem}, not {text!r}")
        return value

    return parse


def add_output(parser: argparse.ArgumentParser, dest: str = "out", stdout: bool = False, **kwargs) -> None:
    """`--output`, with `--out` as an alias (older spelling). An empty name and `-` are refused:
    '' wrote to the current folder's name ('cannot write : it is a folder'), and `-`, standard
    output to many tools, a file named '-'; a command that prints (`stdout`) does so without
    --output."""
    convert = kwargs.pop("type", str)

    def named(text: str):
        if text in ("", "-"):
            where = "leave --output out to print to stdout" if stdout else "give a file or folder name"
            what = "an empty name" if not text else "'-' is not stdout here (it would be a file named '-')"
            raise argparse.ArgumentTypeError(f"{what}: {where}")
        return convert(text)

    parser.add_argument("--output", "--out", dest=dest, type=named, **kwargs)


# a format's other spelling -> its name: every command's --format reads both (eval said table,
# components text; compare said md, components markdown)
FORMAT_ALIASES = {"markdown": "md", "text": "table"}


def add_format(parser: argparse.ArgumentParser, names: Sequence[str], help: str, default: str | None = None) -> None:
    """`--format`, one of `names` (listed by --help) or an alias of one (FORMAT_ALIASES),
    stored as its name."""
    def name(text: str) -> str:
        chosen = FORMAT_ALIASES.get(text, text)
        if chosen not in names:
            raise argparse.ArgumentTypeError(f"invalid choice: {text!r} (choose from {', '.join(names)})")
        return chosen

    aliases = [f"{alias} means {chosen}" for alias, chosen in FORMAT_ALIASES.items() if chosen in names]
    parser.add_argument("--format", type=name, default=default, metavar="{" + ",".join(names) + "}",
                        help=help + (f" ({', '.join(aliases)})" if aliases else ""))


def add_preset(parser: argparse.ArgumentParser) -> None:
    """`--preset NAME` (eval, compare, qrels rank-agree): a measure preset, built in or a plug-in's,
    the presets' entry points scanned (8-25 ms) only when the name or the help is read, not at
    each start of these commands."""
    def presets() -> Registry:
        from harness.evaluate.presets import PRESETS

        return PRESETS

    def described() -> str:
        from harness.evaluate.presets import preset_help

        return preset_help()

    add_named(parser, "--preset", presets, described)


def add_named(parser: argparse.ArgumentParser, flag: str, registry: Callable[[], Registry],
              help: Callable[[], str]) -> None:
    """`flag NAME`: a name `registry()` gives, a plug-in's too (an entry point's, a `python:`
    spec's, as a config takes one); an unknown one is argparse's 'invalid choice', listing the
    names. `help()` is its help text."""
    parser.add_argument(flag, action=_NamedOption, registry=registry, described=help, metavar="NAME")


class _NamedOption(argparse.Action):
    """An option naming a registered component: the name is looked up as it is read, and the
    help, listing them all, is made where help is shown, not as the parser is built: both scan
    the kind's entry points (8-25 ms at each start), which a command not given the option never
    needs, and argparse's `choices` would refuse a `python:` spec."""

    def __init__(self, *args: object, registry: Callable[[], Registry], described: Callable[[], str],
                 **kwargs: object) -> None:
        self.registry, self.described = registry, described
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    @property  # type: ignore[override]
    def help(self) -> str:
        return self.described()

    @help.setter
    def help(self, _: object) -> None:  # (argparse.Action's __init__ sets what this property makes)
        pass

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str,
                 option_string: str | None = None) -> None:
        registry = self.registry()
        try:
            registry.get(values)
        except UnknownName:
            listed = ", ".join(map(repr, registry.names()))
            raise argparse.ArgumentError(self, f"invalid choice: {values!r} (choose from {listed})") from None
        except HarnessError as error:  # a plug-in that cannot be loaded, or a name two claim
            raise argparse.ArgumentError(self, str(error)) from None
        setattr(namespace, self.dest, values)


class _Parser(argparse.ArgumentParser):
    """A mistake on the command line is one line on stderr (and exit status 2), as every other
    error is: the usage summary of a command with many options hid the line that mattered.
    Its subcommands' parsers are of this class too (argparse makes them of the parent's)."""

    words: tuple[str, ...] = ()  # what this parser was given to parse (a subcommand's: the words after its name)

    def error(self, message: str) -> NoReturn:
        message = "; ".join([self._swallowed(message) or message, *self._trec_eval_habits()])
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, noting the innermost (sub)command parser, so that _parser and main
        name it (`harness ikat validate`, not `harness`) and the words it was given."""
        self.words = tuple(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if not hasattr(namespace, _PARSED_BY):
            setattr(namespace, _PARSED_BY, self)
        return namespace, extras

    def _swallowed(self, message: str) -> str | None:
        """Where the positional arguments came out missing (or an option refused one as its
        value), the files an option of several values took from after it, and the fix: such an
        option takes every word up to the next option. None where no such option took a file."""
        positionals = [action for action in self._actions
                       if not action.option_strings and not isinstance(action, argparse._SubParsersAction)]
        names = " ".join((action.metavar or action.dest) + ("..." if action.nargs in ("*", "+") else "")
                         for action in positionals)
        missing = message.partition("the following arguments are required: ")[2].split(", ")
        for option, values in reversed(self._read_words().several):
            files = [value for value in values if Path(value).is_file()]
            if files and (message == no_runs(getattr(self, "least_runs", 1))
                          or message.startswith(f"argument {option}:")
                          or any((action.metavar or action.dest) in missing for action in positionals)):
                return swallowed(option, files, names)
        return None

    def _trec_eval_habits(self) -> list[str]:
        """trec_eval's flags and argument order, given to a command with the options that do
        the same here: each with that option (the README sells trec_eval's numbers)."""
        declared = self._option_string_actions
        hints = []
        for at, word in enumerate(self.words):
            flag, value = word[:2], word[2:] or (self.words[at + 1] if at + 1 < len(self.words) else "N")
            if flag == "-m" and "--measures" in declared:
                hints.append(f"trec_eval's -m {value} is --measures {value} here")
            elif word == "-q" and "--per-query" in declared:
                hints.append("trec_eval's -q is --per-query here")
            elif flag == "-M" and "--depth" in declared:
                hints.append(f"trec_eval's -M {value} is --depth {value} here")
            elif word == "-c" and "--qrels" in declared:
                hints.append("trec_eval's -c is always on here (a judged query the run lacks scores 0)")
            elif flag == "-l" and "--measures" in declared:
                hints.append(f"trec_eval's -l{value} is rel={value} in a measure's name here: P(rel={value})@10")
        first = next((word for word in self._read_words().positional if Path(word).is_file()), None)
        if "--qrels" in declared and first and not any(word.startswith("--qrels") for word in self.words) \
                and _reads_as_qrels(first):
            hints.append(f"{first} reads as qrels, which trec_eval takes first: give it as --qrels {first}")
        return hints

    def _read_words(self) -> _ReadWords:
        """The words given as argparse reads them: an option of several values (nargs='+') takes
        every word up to the next option (or `--`, after which no option takes several), any
        other option taking a value the word after it (`--fill Q R`: R is positional)."""
        read, taking, values, ended = _ReadWords([], []), 0, None, False
        for word in self.words:
            if word.startswith("-") and not _NEGATIVE.fullmatch(word):
                ended = ended or word == "--"
                action = self._option_string_actions.get(word)
                taking = 0 if action is None or action.nargs == 0 else len(self.words) if action.nargs == "+" else 1
                values = [] if action is not None and action.nargs == "+" and not ended else None
                if values is not None:
                    read.several.append((word, values))
            elif taking:
                taking -= 1
                if values is not None:
                    values.append(word)
            else:
                read.positional.append(word)
        return read


@dataclass(frozen=True)
class _ReadWords:
    """What _Parser._read_words finds: the words no option takes as its value, and each option
    of several values given with the words it took."""

    positional: list[str]
    several: list[tuple[str, list[str]]]


def swallowed(option: str, files: Sequence[str], names: str) -> str:
    """How an option of several values that took `files` (the positionals `names`) is told."""
    return (f"{option} took {', '.join(files)}, which {'is a file' if len(files) == 1 else 'are files'} "
            f"(an option with several values takes every word after it): put {names} before {option}, or end "
            f"its values with -- ({option} ... -- {names})")


def _reads_as_qrels(path: str) -> bool:
    """Whether a file's first line is a qrels line (a missing or unreadable file is not)."""
    from harness.trec import looks_like_qrels_line

    try:
        with open_input(path) as lines:
            return looks_like_qrels_line(next(iter(lines), "").split())
    except HarnessError:
        return False


_PARSED_BY = "_parsed_by"  # set by _Parser.parse_known_args, read and removed by _parser
_NEGATIVE = re.compile(r"-\d+|-\d*\.\d+")  # a value, not an option (argparse's rule)


def _describe_nested(parser: argparse.ArgumentParser) -> None:
    """A nested command's --help (`harness ikat validate --help`) opens with its one-line help,
    as a command's does, unless it has a description of its own."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                nested = action.choices[choice.dest]
                nested.description = nested.description or choice.help
                _describe_nested(nested)


def command_parser(chosen: str | None) -> tuple[argparse.ArgumentParser, argparse.ArgumentParser | None]:
    """The `harness` parser with every command named and only `chosen`'s options declared (its
    module alone is imported), and that command's own parser (None if it is not a command)."""
    parser = _Parser(prog="harness", description=DESCRIPTION,
                     epilog="`harness COMMAND --help` lists a command's options.")
    version = sys.modules["harness"].__version__  # the package, imported before this module (no arrow up to it)
    parser.add_argument("--version", action="version", version=f"harness {version}",
                        help="print the harness's version (which the run JSONs record too) and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    found = None
    for name, (module_name, help_text) in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            module = importlib.import_module(module_name)
            module.add_arguments(command)
            _describe_nested(command)
            command.set_defaults(_run=module.run)
            found = command
    return parser, found


def _parser(argv: list[str]) -> tuple[_Parser, argparse.Namespace]:
    """The innermost (sub)command parser that read `argv` (which names the command in errors),
    and what it read; a usage error exits, said by that parser. A last `--` with nothing after it
    (`--measures nDCG@3 --`, as --measures' help says to end it) ends the options: argparse
    refused it as an unrecognized argument where the runs came before."""
    if argv[-1:] == ["--"] and argv.count("--") == 1:
        argv = argv[:-1]
    parser, _ = command_parser(next((a for a in argv if not a.startswith("-")), None))
    args, unknown = parser.parse_known_args(argv)
    named = vars(args).pop(_PARSED_BY)
    if unknown:
        named.error(f"unrecognized arguments: {' '.join(unknown)}")
    if "runs" in vars(args) and not runs(args):  # add_runs's, which --run may fill, so argparse cannot require it
        named.error(no_runs(getattr(named, "least_runs", 1)))
    return named, args


def main(argv: list[str] | None = None) -> int:
    """The command's exit status. Run as the program (no argv: the `harness` script, `python -m
    harness.cli`), a Ctrl-C once the status is decided is ignored, to the end: in the
    interpreter's teardown after it (seconds after a Ray run) it printed a KeyboardInterrupt
    traceback from an exit handler or, once Python has restored SIGINT's default action, ended
    the process by the signal (status -2) though its outputs were written."""
    program = argv is None
    if program:
        _console()
    try:
        return _command(sys.argv[1:] if program else argv)
    finally:
        if program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _console() -> None:
    """Standard streams that never fail on encoding. A closed one (`>&-`, as some job wrappers
    start a command) is /dev/null, on its own descriptor: where Python leaves it None, the board
    printed after the runs raised, and the next file opened took descriptor 1, which a child
    process (Anserini's) would write into. Where stdout is not UTF-8 (an ASCII or Latin-1 locale):
    a file or pipe gets UTF-8, as --output writes and every harness input is read (`topics export
    > x.tsv` stopped at its first curly quote), and a terminal an escape for what it cannot show
    (the leaderboard's em dash raised after the runs were done)."""
    for number, name in ((1, "stdout"), (2, "stderr")):
        stream = getattr(sys, name)
        if stream is None:
            opened = os.open(os.devnull, os.O_WRONLY)  # the lowest free one: `number`, unless stdin is closed too
            if opened != number:
                os.dup2(opened, number)
                os.close(opened)
            setattr(sys, name, open(number, "w", encoding="utf-8", errors="backslashreplace", closefd=False))
        elif isinstance(stream, io.TextIOWrapper) and codecs.lookup(stream.encoding).name != "utf-8":
            stream.reconfigure(errors="backslashreplace",
                               **({} if stream.isatty() else {"encoding": "utf-8"}))


def _command(argv: list[str]) -> int:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads: see retrieve.embeddings
    parser, args = _parser(argv)
    command = parser.prog  # the full command, `harness ikat from-trec`, as argparse's errors name it
    try:
        return int(args._run(args) or 0)
    except BrokenPipeError:  # `| head`: the reader has all it wants; what is left unwritten goes nowhere
        _stdout_to_nowhere()
        return 0
    except Exception as error:
        said = said_error(error)
        if said is None:
            raise
        tail = usage_tail(parser, error) if isinstance(error, HarnessError) else ""
        print(f"{said.frames}{command}: error: {said.line}{tail}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # an Interrupted says what it kept
        print(f"{command}: interrupted" + (f": {interrupt}" if str(interrupt) else
                                           "; finished outputs are kept"), file=sys.stderr)
        return 130


@dataclass(frozen=True)
class Said:
    """An error as the CLI says it: the plug-in's frames of its traceback (or ''), then one line."""
    frames: str
    line: str


def said_error(error: Exception) -> Said | None:
    """What the CLI says of an error the user can act on (None: the harness's own fault, whose
    traceback is shown): a HarnessError's sentence; a plug-in's own import failing, or an optional
    extra not installed, named; a plug-in's own code raising, its frames and one line, not the
    harness's; the system's refusal (a file not this user's, a full disk), one line saying why.
    `harness run --keep-going` says a run's error by it too."""
    if isinstance(error, HarnessError):
        return Said("", str(error))
    if isinstance(error, ModuleNotFoundError):
        from harness.extras import missing_extra
        from harness.registry import plugin_import_failure

        message = plugin_import_failure(error) or missing_extra(error)
        return None if message is None else Said("", message)
    from harness.registry import plugin_failure

    if (found := plugin_failure(error)) is not None:
        return Said(*found)
    if isinstance(error, OSError):
        problem = _system_problem(error)
    else:
        problem = _unnameable(error) if isinstance(error, UnicodeEncodeError) else None
    return None if problem is None else Said("", problem)


def _system_problem(error: OSError) -> str | None:
    """One line for an OSError the user can act on: a file this user may not read or write (a
    colleague's, made under umask 077 in a shared folder), named; a full disk or file-size
    limit. None for any other (a traceback: the harness's own fault)."""
    from harness.atomic import FULL, FULL_MEANS

    where = os.fsdecode(error.filename) if error.filename is not None else None
    if isinstance(error, PermissionError) and where is not None:
        return f"{where}: {error.strerror}: this user may not read or change it (another user's, or read-only)"
    if error.errno in FULL:
        return f"{where or 'writing a file'}: {error.strerror} ({FULL_MEANS})"
    return None


def _unnameable(error: UnicodeEncodeError) -> str | None:
    """One line for a file name this locale cannot hold (an ASCII Python, `LC_ALL=C PYTHONUTF8=0`,
    given `output: runs/café`): the system's encoding of file names failed, not the harness."""
    names = codecs.lookup(sys.getfilesystemencoding()).name
    if names == "utf-8" or codecs.lookup(error.encoding).name != names or not isinstance(error.object, str):
        return None
    return (f"{error.object!r}: file names in this locale are {names}, which cannot hold "
            f"{error.object[error.start:error.end]!r}: run harness under a UTF-8 locale (e.g. LC_ALL=C.UTF-8)")


def print_lines(lines: Iterable[object]) -> None:
    """Each line on stdout, for a command whose exit status is a verdict (`ikat validate`): a
    reader that stops early (`| head`) ends the printing, not the command, so the verdict (its
    summary and exit status 1 for an invalid file) still comes, where main's own catch would
    end the command with 0."""
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_nowhere()


def _stdout_to_nowhere() -> None:
    """What is left unwritten on a closed stdout goes nowhere (not a second BrokenPipeError at exit)."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def usage_tail(parser: _Parser, error: HarnessError) -> str:
    """The `--help` tail of a mistake on the command line, as argparse's errors end: an error
    found once the command runs that opens with one of the command's options (`--run-type 'x'
    is not one of ...`), or an unknown name given as a positional argument (`topics export
    ikatt`, `ikat2023:tst`). An input file's error names the file, and the file is to be
    fixed, so it has none; nor has a name read from a file (a config's)."""
    option = re.match(r"--[\w-]+", str(error))
    given = isinstance(error, UnknownName) and any(error.name in word.split(":")
                                                   for word in parser._read_words().positional)
    if isinstance(error, InputError) or not (given or option and option[0] in parser._option_string_actions):
        return ""
    return f" (`{parser.prog} --help` lists the options)"


if __name__ == "__main__":
    sys.exit(main())
