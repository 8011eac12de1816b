"""`llm[:NAME]`: rewrite each turn with a chat model behind an OpenAI-compatible endpoint
(vLLM, Ollama, llama.cpp's server, OpenAI), at temperature 0.

The endpoint NAME (default `default`) is given in the run config (handed down as a value: the
config's endpoints answer while that config is read and run, `endpoints(...)`),

    llm:
      default: {model: qwen2.5:7b-instruct, base_url: "http://127.0.0.1:11434/v1", prompt: prompts/rewrite.txt}

or, outside a config (`harness topics export`), by HARNESS_LLM_MODEL, HARNESS_LLM_BASE_URL and
HARNESS_LLM_PROMPT for `default`. The prompt template is a text file with `{utterance}` (the
current turn), `{history}` (earlier turns, "User: ..." / "System: ..." lines), `{ptkb}` (the
user's statements) and `{title}`; it reads only the turn and the turns before it, never a
later one. The rewrite is the answer's first non-empty line after any leading `<think>` block
(after_thinking: a reasoning model served without a reasoning parser).

Answers are cached on disk (cache_root()/llm/), keyed by model and the filled-in prompt, each
written atomically: a rerun sends nothing. A completion with no text (a reasoning model out of
tokens, a content filter) is an error naming its finish_reason, never cached: a rerun asks again.
An API key, if the endpoint needs one, is read from the environment variable `api_key_env`
names (OPENAI_API_KEY by default).
"""

from __future__ import annotations

import hashlib
import json
import os
import string
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import urlsplit

from harness.atomic import atomic_write
from harness.errors import HarnessError, InputError, shown
from harness.paths import cache_root, file_sha256
from harness.queries import Strategy, add
from harness.queries.history import build, current
from harness.registry import Param
from harness.topics.model import Conversation, Query

DEFAULT = "default"
FIELDS = ("utterance", "history", "ptkb", "title")
NO_TEXT = "no text"  # a completion holding no text: no answer (no_text)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"  # a reasoning model's thinking, before its answer (after_thinking)


@dataclass(frozen=True)
class Endpoint:
    model: str
    base_url: str
    prompt: Path  # template file
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 120.0

    def __post_init__(self) -> None:
        """A base URL without http(s):// or a host is said so here, not as 'cannot reach' later."""
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise HarnessError(f"LLM base URL {self.base_url!r} is not an http:// or https:// URL with a host "
                               "(e.g. http://127.0.0.1:8000/v1)")

    def template(self) -> str:
        """The checked template, read once per version of the file (it is asked for every turn)."""
        try:
            stat = os.stat(self.prompt)
        except OSError as error:
            raise InputError(self.prompt, f"cannot read the prompt template ({error})") from None
        return _template(self.prompt, (stat.st_mtime_ns, stat.st_size))

    def record(self) -> dict:
        """What the run JSON records (the key is never recorded)."""
        return {"model": self.model, "base_url": self.base_url, "prompt": str(self.prompt),
                "prompt_sha256": file_sha256(self.prompt), "temperature": 0}


def template_fields(text: str, source: Path | str, none: str | None) -> frozenset[str]:
    """The {field}s of a prompt template (this strategy's, an LLM judge's). A template without
    any (an empty file, or the wrong one) would send the same prompt for every item, and get the
    same answer back: an InputError saying `none` (None: the caller says it, once it knows the
    fields its items carry), as is a brace left unpaired."""
    try:
        fields = [(name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(text)
                  if name is not None]
    except ValueError as error:
        raise InputError(source, f"bad prompt template ({error}); a literal brace is {{{{ or }}}}") from None
    for name, spec, conversion in fields:  # filled with text, a spec or conversion fails (or exhausts memory)
        if spec or conversion:
            written = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
            raise InputError(source, f"field {shown(written)} in the prompt template: a field takes no format spec "
                                     f"or conversion; write {{{name}}}")
    names = frozenset(name for name, _, _ in fields)
    if not names and none is not None:
        raise InputError(source, none)
    return names


@lru_cache(maxsize=8)
def _template(path: Path, stamp: tuple[int, int]) -> str:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise InputError(path, f"cannot read the prompt template ({error})") from None
    names = template_fields(text, path, f"uses no field: every turn would get the same prompt; known: "
                                        f"{', '.join(FIELDS)}")
    unknown = sorted(names - set(FIELDS))
    if unknown:
        raise InputError(path, f"unknown field {{{unknown[0]}}}; known: {', '.join(FIELDS)}")
    return text


ENDPOINTS: dict[str, Endpoint] = {}  # set by a program (`configure`), for every config
# a run config's `llm:` section, for the block that reads or runs that config (`endpoints`):
# reading a config changes nothing else, and two configs never see each other's endpoints
_CONFIG_ENDPOINTS: ContextVar[Mapping[str, Endpoint]] = ContextVar("llm endpoints", default={})


def configure(name: str, endpoint: Endpoint) -> None:
    ENDPOINTS[name] = endpoint


@contextmanager
def endpoints(named: Mapping[str, Endpoint]) -> Iterator[None]:
    """Within the block, `llm:NAME` asks these endpoints (a config's `llm:` section)."""
    token = _CONFIG_ENDPOINTS.set(named)
    try:
        yield
    finally:
        _CONFIG_ENDPOINTS.reset(token)


def endpoint(name: str) -> Endpoint:
    for table in (_CONFIG_ENDPOINTS.get(), ENDPOINTS):
        if name in table:
            return table[name]
    if name == DEFAULT and os.environ.get("HARNESS_LLM_BASE_URL") and os.environ.get("HARNESS_LLM_MODEL"):
        prompt = os.environ.get("HARNESS_LLM_PROMPT")
        if not prompt:
            raise HarnessError("HARNESS_LLM_PROMPT must name the prompt template file for llm")
        return Endpoint(os.environ["HARNESS_LLM_MODEL"], os.environ["HARNESS_LLM_BASE_URL"], Path(prompt))
    raise HarnessError(f"llm:{name} has no endpoint: give `llm: {{{name}: {{model, base_url, prompt}}}}` in the "
                       "run config, or set HARNESS_LLM_BASE_URL, HARNESS_LLM_MODEL and HARNESS_LLM_PROMPT")


def history_text(conversation: Conversation, turn_index: int) -> str:
    """The turns before `turn_index` as "User: ..." / "System: ..." lines (also what an LLM
    judge reads as the conversation)."""
    lines = []
    for earlier in conversation.history(turn_index):
        lines.append(f"User: {earlier.utterance}")
        if earlier.response:
            lines.append(f"System: {earlier.response}")
    return "\n".join(lines)


def prompt_for(template: str, conversation: Conversation, turn_index: int) -> str:
    turn = current(conversation, turn_index)
    return template.format(
        utterance=turn.utterance,
        history=history_text(conversation, turn_index),
        ptkb="\n".join(f"- {statement.text}" for statement in conversation.personal),
        title=conversation.title or "",
    )


def _cache_path(model: str, prompt: str) -> Path:
    key = hashlib.sha256(json.dumps([model, prompt], ensure_ascii=False).encode("utf-8")).hexdigest()
    return cache_root() / "llm" / key[:2] / f"{key}.json"


def complete(target: Endpoint, prompt: str, turn: str) -> str:
    """The model's answer to one prompt (for `turn`): from the cache, else asked once and cached."""
    path = _cache_path(target.model, prompt)
    if path.is_file():
        try:
            answer = json.loads(path.read_text(encoding="utf-8"))["answer"]
            if after_thinking(answer).strip():  # else no text, which an earlier version cached: asked again
                return answer
        except (json.JSONDecodeError, KeyError, UnicodeDecodeError, AttributeError):
            pass  # a damaged entry is asked again and replaced
    answer = _ask(target, prompt, turn)
    with atomic_write(path) as handle:
        json.dump({"model": target.model, "prompt": prompt, "answer": answer}, handle, ensure_ascii=False)
    return answer


@lru_cache(maxsize=4)
def _client(base_url: str, api_key: str, timeout_s: float):
    """One client (one connection pool) per endpoint."""
    import openai

    return openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=2)


def _ask(target: Endpoint, prompt: str, turn: str) -> str:
    """The answer's text; one with none is an error naming why (no_text), so that nothing is
    cached and the next run asks again."""
    import openai

    client = _client(target.base_url, os.environ.get(target.api_key_env) or "none", target.timeout_s)
    try:
        response = client.chat.completions.create(
            model=target.model, messages=[{"role": "user", "content": prompt}], temperature=0)
    except openai.APIConnectionError:
        raise HarnessError(f"cannot reach the LLM endpoint at {target.base_url}; is the server running?") from None
    except openai.APIStatusError as error:
        raise status_error(target, error.status_code) from None
    except json.JSONDecodeError:  # HTTP 200 whose body the client could not read as JSON
        raise not_a_completion(target.base_url, " (its body is not JSON)") from None
    answer = answer_text(response, target.base_url)
    if not after_thinking(answer).strip():
        raise HarnessError(f"the LLM endpoint at {target.base_url} answered turn {turn} with "
                           f"{no_text(response, thought=bool(answer.strip()))} "
                           f"for model {target.model!r} (a reasoning model out of tokens, a content filter); "
                           "nothing is cached: a rerun asks again")
    return answer


def status_error(target: Endpoint, status: int, detail: str = "") -> HarnessError:
    """The one-line error for an HTTP error status; a 404 from a base URL that is not an API
    root (no /v1) asks about that, the usual cause, not about the model."""
    root = urlsplit(target.base_url).path.rstrip("/").endswith("/v1")
    hint = "; is the base URL the API root, e.g. http://HOST:PORT/v1?" if status == 404 and not root else ""
    return HarnessError(f"the LLM endpoint at {target.base_url} answered HTTP {status} for model "
                        f"{target.model!r}{detail}{hint}")


def not_a_completion(base_url: str, why: str = "") -> HarnessError:
    """The one-line error for an HTTP 200 body that is no chat completion (`why`: what it is)."""
    return HarnessError(f"the LLM endpoint at {base_url} did not answer with a chat completion{why}; is it an "
                        "OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1)?")


def answer_text(response, base_url: str) -> str:
    """The text of a chat completion's first choice, "" when it has none (no choice, as a
    content filter answers, or no content): an empty answer, not a crash, which the llm judge
    and strategy take for no answer (no_text): its pair fails, its rewrite is an error. A body that is not a
    chat completion (a web page at a wrong base URL, answered HTTP 200), or whose message
    content is not text, is a one-line error (never cached as an answer)."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list):
        raise not_a_completion(base_url)
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    if content is not None and not isinstance(content, str):
        raise not_a_completion(base_url, f" (its message content is a JSON {type(content).__name__}, not text)")
    return content or ""


def no_text(response, thought: bool = False) -> str:
    """The cause counted for a completion holding no text, e.g. `no text (finish_reason length)`:
    a reasoning model out of tokens, a content filter (`no choice`); `thought`: its text is only
    thinking, `no text after the thinking (...)`. Not an answer: never cached."""
    choices = getattr(response, "choices", None)
    reason = str(getattr(choices[0], "finish_reason", None)) if choices else "no choice"
    return f"{NO_TEXT}{' after the thinking' if thought else ''} (finish_reason {reason})"


def after_thinking(answer: str) -> str:
    """The reply after a leading `<think>...</think>` block (a reasoning model's, served without
    vLLM's --reasoning-parser); a reply holding only its end, the chat template having opened
    the block in the prompt (DeepSeek-R1's), counts as leading too. A leading block never closed
    (cut off at the token limit) leaves "": no answer, as content null is. Any other reply as it is."""
    head, close, tail = answer.partition(THINK_CLOSE)
    if close and (head.lstrip().startswith(THINK_OPEN) or THINK_OPEN not in head):
        return tail
    return "" if not close and answer.lstrip().startswith(THINK_OPEN) else answer



class LLM(Strategy):
    def query(self, conversation: Conversation, turn_index: int, name: str) -> Query:
        target = endpoint(name)
        answer = complete(target, prompt_for(target.template(), conversation, turn_index),
                          conversation.turns[turn_index].qid)
        rewrite = next(line.strip() for line in after_thinking(answer).splitlines() if line.strip())  # has text
        return build(conversation, turn_index, [rewrite])

    def check(self, name: str) -> None:
        """The endpoint is configured and its prompt template reads (nothing is sent)."""
        endpoint(name).template()

    def inputs(self, name: str) -> dict:
        return endpoint(name).record()


add(LLM("llm", "each turn rewritten by a chat model behind an OpenAI-compatible endpoint, at temperature 0", [
    Param("NAME", str, DEFAULT, "the endpoint, a key of the config's `llm:` section")]))
