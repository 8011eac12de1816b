"""The README and `--help` are true: every command in the README's shell blocks runs in CI as
written, and the help says what the tool is in whole sentences.

How the README's blocks are read (the README states this before its first block; a new section
follows the same rules, and this test picks it up without changes here):

- Shell blocks are fenced blocks whose info string starts with `sh`, `bash`, `shell` or
  `console`; other blocks (python, yaml) are not commands and are not run. In a block, a line
  ending in a backslash continues on the next, and a heredoc (`<<'END'` ... `END`) belongs to
  its command.
- A run block (info string `sh` alone) runs command by command, in order, under
  `bash -o pipefail`, in a scratch folder holding links to the repo's `data/`, `qrels/`,
  `configs/` and its Python environment (`.venv`, whose `bin/` is also first on PATH, as
  `. .venv/bin/activate` makes it); outputs and the harness cache land in the scratch folder.
  Every command must exit 0.
- A placeholder is `<name>` (angle brackets around a word without spaces): the reader's own
  file or value. In a run block it is replaced by a file of its kind that PLACEHOLDERS below
  makes; a placeholder missing from PLACEHOLDERS fails the test, naming it.
- A parse-only block (info string `sh parse-only`) needs what CI lacks: a server that keeps
  running, a cluster, a collection, the network, or minutes of work. Its `harness ...`
  commands go through harness's own argument parser (the command and every option must exist
  and take the values given; placeholders become a plain word) and `make TARGET` through
  `make -n TARGET`; other commands (pip, git, vllm, ray, ...) are shown, not run.

Cost: the README's run blocks took about 45 s on 2 cores (the tour: an index build, a BM25
run, a report), the parse-only blocks about 3 s, the rest well under a second.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.cli import COMMANDS, _parser, command_parser, main
from harness.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
SHELLS = ("sh", "bash", "shell", "console")
PLACEHOLDER = re.compile(r"<([A-Za-z0-9][\w.\-]*)>")


def _documents(folder: Path) -> Path:
    """A documents JSONL (id, contents) for `harness segment`."""
    path = folder / "docs.jsonl"
    sentences = ["The DASH diet lowers blood pressure.", "It is rich in vegetables, fruit and whole grains.",
                 "Salt is limited to about 2,300 mg a day."]
    path.write_text("".join(f'{{"id": "doc-{i}", "contents": "{" ".join(sentences[i:] + sentences[:i])}"}}\n'
                            for i in range(3)), encoding="utf-8")
    return path


def _run_from_qrels(qrels: str, name: str) -> Callable[[Path], Path]:
    """A TREC run ranking each query's judged documents by their grade."""
    def make(folder: Path) -> Path:
        path = folder / name
        lines = [line.split() for line in (REPO_ROOT / qrels).read_text(encoding="utf-8").splitlines()]
        path.write_text("".join(f"{qid} Q0 {doc} {rank + 1} {grade} mine\n"
                                for rank, (qid, _, doc, grade) in enumerate(lines)), encoding="utf-8")
        return path
    return make


# placeholder -> a function making a file of its kind in the scratch folder (its path replaces it)
PLACEHOLDERS: dict[str, Callable[[Path], Path]] = {
    "docs.jsonl": _documents,
    "my-cosrec.run": _run_from_qrels("qrels/cosrec/curated.qrels", "my-cosrec.run"),
}


@dataclass(frozen=True)
class Block:
    line: int  # of the opening fence, 1-based
    mode: str  # "run" or "parse-only"
    commands: tuple[str, ...]

    def __str__(self) -> str:
        return f"README.md:{self.line}"


def _commands(lines: list[str]) -> list[str]:
    """The block's commands: continuation lines joined, heredocs kept with their command,
    blank and comment-only lines dropped."""
    commands, pending, heredoc = [], "", None
    for line in lines:
        if heredoc:
            pending += "\n" + line
            if line.strip() == heredoc:
                commands.append(pending)
                pending, heredoc = "", None
            continue
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line[:-1] + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        if found := re.search(r"<<-?'?\"?(\w+)", pending):
            heredoc = found.group(1)
            continue
        commands.append(pending)
        pending = ""
    return commands


def readme_blocks(text: str) -> list[Block]:
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```") and lines[i][3:].split()[:1] and lines[i][3:].split()[0] in SHELLS:
            words = lines[i][3:].split()
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            mode = "parse-only" if words[1:] == ["parse-only"] else "run" if len(words) == 1 else " ".join(words[1:])
            blocks.append(Block(i + 1, mode, tuple(_commands(lines[i + 1:end]))))
            i = end
        i += 1
    return blocks


BLOCKS = readme_blocks(README.read_text(encoding="utf-8"))


def _blocks(mode: str) -> list:
    return [pytest.param(block, id=str(block)) for block in BLOCKS if block.mode == mode]


def test_every_shell_block_is_a_run_block_or_parse_only():
    assert {block.mode for block in BLOCKS} <= {"run", "parse-only"}, [str(b) for b in BLOCKS
                                                                         if b.mode not in ("run", "parse-only")]
    assert any(block.mode == "run" for block in BLOCKS)


def test_every_placeholder_in_a_run_block_has_a_substitute():
    unknown = {f"{block}: <{name}>" for block in BLOCKS if block.mode == "run"
               for command in block.commands for name in PLACEHOLDER.findall(command) if name not in PLACEHOLDERS}
    assert not unknown, f"add a substitute to PLACEHOLDERS in tests/test_docs.py: {sorted(unknown)}"


@pytest.fixture
def scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A folder that looks like a clone (data/, qrels/, configs/, .venv), and the environment
    the commands run in: this harness first on the path, the cache in the folder."""
    for name in ("data", "qrels", "configs"):
        (tmp_path / name).symlink_to(REPO_ROOT / name)
    (tmp_path / ".venv").symlink_to(sys.prefix)
    env = {k: v for k, v in os.environ.items() if not k.startswith("HARNESS_") or k == "HARNESS_SHARED"}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")])),
               HARNESS_CACHE=str(tmp_path / ".cache"))
    return tmp_path, env


@pytest.mark.slow
@pytest.mark.java
@pytest.mark.parametrize("block", _blocks("run"))
def test_every_command_of_a_run_block_exits_0_as_written(block: Block, scratch):
    folder, env = scratch
    for command in block.commands:
        written = PLACEHOLDER.sub(lambda m: str(PLACEHOLDERS[m.group(1)](folder)), command)
        done = subprocess.run(["bash", "-o", "pipefail", "-c", written], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{block}: {command}\n{done.stderr[-3000:]}"


def test_the_tour_writes_into_tour_as_it_says():
    """"What the tour writes goes to `tour/`": no output of it lands in the clone's root."""
    lines = README.read_text(encoding="utf-8").splitlines()
    heading = lines.index("## A five-minute tour") + 1
    tour = next(block for block in BLOCKS if block.line > heading)
    outputs = [(words[i], words[i + 1]) for command in tour.commands for words in [shlex.split(command, comments=True)]
               for i in range(len(words) - 1) if words[i] in ("--output", "--ptkb-out")]
    assert outputs and all(path.startswith("tour/") for _, path in outputs), outputs


@pytest.mark.parametrize("block", _blocks("parse-only"))
def test_every_harness_command_of_a_parse_only_block_parses(block: Block):
    for command in block.commands:
        words = shlex.split(PLACEHOLDER.sub(lambda m: m.group(1), command.split("<<")[0]), comments=True)
        for argv in _simple_commands(words):
            if argv[0] == "harness":
                try:
                    _parser(argv[1:])
                except SystemExit as stop:
                    pytest.fail(f"{block}: {' '.join(argv)}: harness's parser stops with status {stop.code}")
            elif argv[0] == "make":
                done = subprocess.run(["make", "-n", *argv[1:]], cwd=REPO_ROOT, capture_output=True, text=True)
                assert done.returncode == 0, f"{block}: {' '.join(argv)}: {done.stderr}"


def _simple_commands(words: list[str]) -> list[list[str]]:
    """Words split at `&&`, `||`, `;` and `|`."""
    commands: list[list[str]] = [[]]
    for word in words:
        if word in ("&&", "||", ";", "|"):
            commands.append([])
        else:
            commands[-1].append(word)
    return [c for c in commands if c]


def test_the_wheel_the_readme_installs_is_the_one_pip_builds():
    """The distribution name is free on PyPI (`harness` is another project's) and is what the
    README installs; the `all` extra names the distribution itself."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    name, version = project["name"], project["version"]
    assert name == "convsearch-harness"
    wheel = f"{name.replace('-', '_')}-{version}-*.whl"  # a platform's: it holds harness/evaluate/_lean.c built
    assert f"dist/{wheel}" in README.read_text(encoding="utf-8")
    assert all(extra.startswith(f"{name}[") for extra in project["optional-dependencies"]["all"])


def test_top_level_help_describes_the_tool_in_whole_sentences(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    description = " ".join(help_text.split("\n\n")[1].split())
    assert description.startswith("A TREC-style evaluation harness") and description.endswith(".")
    assert "Each subcommand lives" not in help_text


def test_version_prints_the_version_the_run_jsons_record(capsys):
    """Researchers cite the version they used: `harness --version`, with no command."""
    import harness

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out == f"harness {harness.__version__}\n"


@pytest.mark.parametrize("argv, says", [
    (["eval", "--bogus"], "harness eval: error: the following arguments are required: --qrels"),
    (["eval", "--qrels", "q", "--bogus"], "harness eval: error: unrecognized arguments: --bogus"),
    (["evl"], "harness: error: argument COMMAND: invalid choice: 'evl'"),
    (["ikat", "validate", "x", "--topics", "ikat2023", "--bogus"],
     "harness ikat validate: error: unrecognized arguments: --bogus"),
])
def test_a_mistake_on_the_command_line_is_one_line_naming_the_command_and_its_help(capsys, argv, says):
    """As the README's command-line conventions say (argparse would print the usage summary first)."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.count("\n") == 1
    assert err.startswith(says) and err.rstrip().endswith(f"(`{says.split(':')[0]} --help` lists the options)")


@pytest.mark.parametrize("argv, alias, name", [
    (["eval", "--qrels", "q", "r"], "text", "table"),
    (["qrels", "agree", "a", "b"], "text", "table"),
    (["qrels", "rank-agree", "a", "b", "r"], "text", "table"),
    (["arena", "--votes", "v"], "text", "table"),
    (["arena", "--votes", "v"], "markdown", "md"),
    (["compare", "--qrels", "q", "r"], "markdown", "md"),
    (["responses", "eval", "r", "--nuggets", "n", "--judge", "minilm"], "markdown", "md"),
    (["components"], "text", "table"),
    (["components"], "markdown", "md"),
])
def test_a_format_reads_under_either_spelling_in_every_command(argv, alias, name):
    """A spelling one command takes works in the next (components said text and markdown, the
    others table and md): either is read as the name --help lists."""
    assert _parser([*argv, "--format", alias])[1].format == _parser([*argv, "--format", name])[1].format == name


@pytest.mark.parametrize("command, args", [
    ("eval", ["--qrels", "q", "r"]), ("qrels agree", ["a", "b"]), ("qrels rank-agree", ["a", "b", "r1", "r2"]),
    ("arena", ["--votes", "v"]), ("compare", ["--qrels", "q", "r"]),
    ("responses eval", ["r", "--nuggets", "n", "--judge", "minilm"]),
])
def test_every_output_suffix_a_command_takes_is_one_its_format_help_lists(command, args, capsys):
    """The refusal of --output x.pdf lists the suffixes the command takes: --help lists the same."""
    assert main([*command.split(), *args, "--output", "x.pdf"]) == 2
    known = re.search(r"\(known: ([^)]*)\)", capsys.readouterr().err).group(1).split()
    parser = dict(_command_parsers())[f"harness {command}"]
    [described] = [action.help for action in parser._actions if "--format" in action.option_strings]
    assert [suffix for suffix in known if not re.search(rf"(?<![\w.]){re.escape(suffix)}\b", described)] == []


@pytest.mark.parametrize("argv, says", [
    (["ikat", "from-trec", "r.run", "--benchmark", "ikat2023", "--run-name", "r", "--run-type", "only_response",
      "--output", "x.json"],
     "harness ikat from-trec: error: --run-type 'only_response' is not one of automatic, manual (iKAT 2023)"),
    (["topics", "export", "ikat2023", "--strategy", "manaul"],
     "harness topics export: error: --strategy: unknown query strategy 'manaul'; nearest: manual; known: "),
])
def test_a_mistake_in_an_option_found_as_the_command_runs_reads_as_argparse_s_own(tmp_path, monkeypatch, capsys,
                                                                                  argv, says):
    """Found after parsing, it names the whole command and ends with its --help, as the README's
    command-line conventions say."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(says)
    assert err.endswith(f" (`{says.split(':')[0]} --help` lists the options)\n")


@pytest.mark.parametrize("argv, says", [
    (["topics", "export", "ikatt"], "harness topics export: error: unknown benchmark 'ikatt'; nearest: ikat2025; "),
    (["topics", "export", "ikat2023:tst"], "harness topics export: error: ikat2023 has no split 'tst'; known: "),
    (["components", "benchmark", "ikatt"], "harness components: error: unknown benchmark 'ikatt'; nearest: "),
])
def test_an_unknown_name_given_as_a_positional_argument_ends_with_the_help(capsys, argv, says):
    """The command line is what to fix, as when the error opens with an option."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(says)
    assert err.endswith(f" (`{says.split(':')[0]} --help` lists the options)\n")


def test_an_input_file_s_error_names_the_whole_command_and_the_file_without_the_help(tmp_path, capsys):
    """The file is what to fix, not the command line: no --help tail."""
    assert main(["ikat", "to-trec", str(tmp_path / "nope.json"), "--output", str(tmp_path / "x.run")]) == 2
    assert capsys.readouterr().err == f"harness ikat to-trec: error: {tmp_path / 'nope.json'}: no such file\n"


def _command_parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command's parser and every nested command's (`harness ikat validate`)."""
    found = []

    def walk(parser: argparse.ArgumentParser) -> None:
        found.append((parser.prog, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for nested in action.choices.values():
                    walk(nested)
    for name in COMMANDS:
        walk(command_parser(name)[1])
    return found


def test_every_command_and_nested_command_says_what_it_does_atop_its_help():
    assert [prog for prog, parser in _command_parsers() if not parser.description] == []


def test_every_option_of_every_command_says_what_it_takes_in_its_help():
    silent = {(prog, action.option_strings[0] if action.option_strings else action.dest)
              for prog, parser in _command_parsers() for action in parser._actions
              if action.help is None and not isinstance(action, argparse._SubParsersAction)}
    assert sorted(silent) == []


def _keys_accepted(document: dict) -> list[str]:
    """The keys a config accepts where `document` has one it does not ('zz'), as its error lists them."""
    from harness.runner.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match="zz: unknown key; known: ") as raised:
        parse_config(Path("c.yaml"), document)
    return str(raised.value).split("known: ")[1].split(", ")


def _keys_listed(lead: str) -> list[str]:
    """The keys of the README's Config reference list after the line ending with `lead` (and a blank line)."""
    text = README.read_text(encoding="utf-8")
    section = text[text.index("\n## Config reference\n"):]
    lines = section[section.index(f"{lead}\n\n") + len(lead) + 2:].splitlines()
    items = lines[:next(i for i, line in enumerate(lines) if not line.startswith(("- ", "  ")))]
    return [match.group(1) for line in items if (match := re.match(r"- `(\w+)`", line))]


def test_the_config_reference_lists_every_key_a_config_accepts_and_no_other():
    top = _keys_accepted({"experiments": [], "zz": 1})
    experiment = _keys_accepted({"experiments": [{"topics": "ikat2023:test", "retrievers": ["bm25"], "zz": 1}]})
    assert sorted(_keys_listed("Its top-level keys:")) == sorted(top)
    assert sorted(_keys_listed("An experiment's keys:")) == sorted(experiment)
