"""`llm`: a judge behind any OpenAI-compatible chat endpoint (vLLM, Ollama, llama.cpp's
server, OpenAI), at temperature 0, reproducible by construction.

- The prompt template is a text file with named fields (`{query}`, `{context}`, `{passage}`,
  ... as the items carry them) plus `{scale}` (the scale's labels and what each means) and
  `{labels}` ("0, 1, 2, 3"), which the judge fills in. The harness ships its own under
  harness/judge/prompts/ (`relevance.txt`).
- Every answer is cached on disk, keyed by model, the template's sha256, the filled prompt
  and the scale: one append-only JSON-lines file per (model, template, scale) under
  cache_root()/judge/, one line per answer (with the endpoint that gave it, which the
  provenance credits), written as soon as the answer arrives. A rerun
  sends nothing; a kill or Ctrl-C loses only the requests in flight (a line torn by a kill
  is ignored), and the rerun resumes from the cache. Ctrl-C ends at once: the requests are
  sent from daemon threads, which nothing waits for.
- Answers are parsed strictly (harness.judge.scales): one off the scale is "unparseable",
  counted and cached (the model said it), never mapped to a label. A reasoning model's leading
  `<think>...</think>` block (what vLLM leaves in the reply without its --reasoning-parser) is
  not the answer: the text after it is parsed, and the whole reply cached.
- A completion with no text (content null or blank, finish_reason `length` where a reasoning
  model spent its token limit thinking, or `content_filter`) is no answer: the pair fails, with
  the cause `no text (finish_reason length)`, is not cached and not retried (at temperature 0
  it would come back the same), and a rerun asks it again. So is a reply with no text after its
  thinking (`<think>...</think>` alone, or a `<think>` block never closed: cut off at the token
  limit by a server that leaves the thinking in), `no text after the thinking (finish_reason
  length)`; one an earlier version cached is asked again.
- At most `concurrency` requests at once (default 8); a timeout, HTTP 429 or 5xx is retried
  `retries` times with exponential backoff (honouring Retry-After); still failing, the pair
  is "failed" and not cached, so a rerun asks again. An endpoint that cannot be reached is a
  one-line error, and so is one that has answered nothing when a pair's tries have all timed
  out; so is any other HTTP error (a wrong model name, a missing key).
- A pair refused with HTTP 400, 413 or 422 (a passage past the model's context window) is
  "failed" too, not retried (it would be refused again), while the endpoint answers other
  pairs: this run, or earlier ones whose answers it gave are in the cache. Refused before it
  answers any, 8 times in a row (or `concurrency`, if more, or every request there is), it is
  refusing the requests, not a pair (a parameter it rejects): a one-line error, as a wrong model
  is. (The first refusal alone cannot tell: a long passage is refused at once, before the
  answers to the requests sent with it.)
- Every pair failed (none answered, this run or from the cache: an endpoint answering only 5xx,
  or only completions with no text) is a one-line error naming the causes, `HTTP 503 on all 160
  requests`: nothing was judged, so nothing is written (an empty qrels, a board of zeros).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import HarnessError, InputError, Interrupted, counted
from harness.judge.base import CACHE_DIR, JUDGES, SCALE, UNRECORDED, counts, now
from harness.judge.model import Item, Judgment
from harness.judge.scales import Scale
from harness.paths import cache_root
from harness.registry import AtLeast, Param
from harness.queries.llm import (Endpoint, after_thinking, answer_text, no_text, not_a_completion, status_error,
                                 template_fields)

PROMPTS = Path(__file__).with_name("prompts")
REFUSALS = frozenset({400, 413, 422})  # statuses that may refuse one request (too long), not the endpoint
REFUSED_IN_A_ROW = 8  # refusals (or `concurrency`, if more) with no answer yet: the endpoint refuses every request
CONCURRENCY, RETRIES = 8, 4  # the defaults of every door to this judge: the CLI, the API, configs
BACKOFF_CAP_S = 60.0


def default_prompt(name: str = "relevance") -> Path:
    """A prompt the harness ships (harness/judge/prompts/NAME.txt)."""
    return PROMPTS / f"{name}.txt"


def check_prompt(prompt: Path | str, item: Item, scale: Scale) -> Template:
    """The prompt filled once with `item`, one of the kind the judge is to get (its fields empty):
    a template using no field, or one those items lack, is an InputError naming the file now. The
    judge fills its prompts only as it judges: `harness judge` with nothing left to judge never
    said it, a citation prompt's mistake came after every nugget's request was paid for, a hosted
    task's at its first upload. Returns the template, which the judge takes as it is (not read again)."""
    template = Template.load(prompt)
    template.fill(item.fields, scale)
    return template


@dataclass(frozen=True)
class Template:
    text: str
    source: str  # the file it came from, or "<text>"
    sha256: str
    names: frozenset[str]

    @classmethod
    def load(cls, template: Path | str) -> Template:
        """A Path, or a one-line str naming an existing file, is a template file; any other
        str is the template's text."""
        if isinstance(template, str) and "\n" not in template and "{" not in template and Path(template).is_file():
            template = Path(template)
        if isinstance(template, Path):
            try:
                data = template.read_bytes()
                text = data.decode("utf-8")
            except (OSError, UnicodeDecodeError) as error:
                raise InputError(template, f"cannot read the prompt template ({error})") from None
            source = str(template)
        else:
            text, source = template, "<text>"
            data = text.encode("utf-8")
        names = template_fields(text, source, None)  # none: said by fill, which knows the items' fields
        odd = sorted(name for name in names if not name.isidentifier())
        if odd:
            raise InputError(source, f"bad field {{{odd[0]}}} in the prompt template: a field is a plain name")
        return cls(text, source, hashlib.sha256(data).hexdigest(), names)

    def fill(self, fields: Mapping[str, str], scale: Scale) -> str:
        """A template using no field, or one the items lack, is an error naming the fields this
        judge's items have (a relevance judge's are not a nugget judge's)."""
        values = {"scale": scale.describe(), "labels": ", ".join(map(str, scale.labels)), **fields}
        if not self.names:
            raise InputError(self.source, f"uses no {{field}}: every item would get the same prompt; the items have: "
                                          f"{', '.join(sorted(values))}")
        missing = sorted(self.names - set(values))
        if missing:
            raise InputError(self.source, f"the prompt template uses {{{missing[0]}}}, which the items do not "
                                          f"carry; they have: {', '.join(sorted(values))}")
        return self.text.format_map(values)


class AnswerCache:
    """Answers of one (model, template, scale), keyed by the filled prompt's sha256: an
    append-only JSON-lines file, loaded once, appended to (one whole line per answer) as
    answers arrive. Each line says which endpoint answered, and when: the same model name
    served elsewhere shares the cache, and the provenance names who answered."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.answers: dict[str, str] = {}
        self.endpoints: dict[str, str] = {}  # key -> the base URL that answered (lines that say it)
        self.dates: dict[str, str] = {}  # key -> when it answered (lines that say it)
        self._lock = threading.Lock()
        self._handle = None
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    try:
                        record = json.loads(line)
                        # else an answer no answer_text gives, or no text (after the thinking), which an
                        # earlier version kept: asked again
                        if isinstance(record["answer"], str) and after_thinking(record["answer"]).strip():
                            self.answers[record["key"]] = record["answer"]
                            if isinstance(record.get("endpoint"), str):
                                self.endpoints[record["key"]] = record["endpoint"]
                            if isinstance(record.get("date"), str):
                                self.dates[record["key"]] = record["date"]
                    except (ValueError, KeyError, TypeError):
                        pass  # a line torn by a kill: that answer is asked again
        except FileNotFoundError:
            pass
        except OSError as error:  # the cache folder is a file, or unreadable
            raise self._unusable(error) from None

    def _unusable(self, error: OSError) -> HarnessError:
        return HarnessError(f"cannot use the judge's answer cache {self.path}: {error.strerror or error} (its folder, "
                            "--cache or the harness cache's judge/, must be a folder harness can write)")

    def put(self, key: str, answer: str, item_key: tuple[str, ...], endpoint: str) -> None:
        """Appended and flushed at once (kept open between answers)."""
        date = now()
        line = json.dumps({"key": key, "item": list(item_key), "answer": answer, "endpoint": endpoint, "date": date},
                          ensure_ascii=False) + "\n"
        with self._lock:
            self.answers[key] = answer
            self.endpoints[key] = endpoint
            self.dates[key] = date
            try:
                if self._handle is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._handle = open(self.path, "a+b")
                    self._handle.seek(0, os.SEEK_END)
                    if self._handle.tell():  # after a line torn by a kill, start a new one
                        self._handle.seek(-1, os.SEEK_END)
                        if self._handle.read(1) != b"\n":
                            line = "\n" + line
                self._handle.write(line.encode("utf-8"))
                self._handle.flush()
            except OSError as error:  # a read-only folder, a full disk: an answer that cannot be kept stops the run
                raise self._unusable(error) from None

    def close(self) -> None:
        with self._lock:
            if self._handle is not None:
                self._handle.close()
                self._handle = None


class Refused(HarnessError):
    """An HTTP 400, 413 or 422 answer to one request: its pair failed, or, when every request
    is refused, the run's one-line error (judge() decides which)."""

    def __init__(self, endpoint: Endpoint, status: int, message: str) -> None:
        super().__init__(str(status_error(endpoint, status, f": {message}")))
        self.example = f"HTTP {status}: {message}"


@dataclass
class Stats:
    """What the last judge() did: requests sent, failed requests by cause, retries sent, wall time."""

    requests: int = 0
    retries: int = 0
    causes: dict[str, int] = field(default_factory=dict)  # "timeout", "HTTP 429", ... -> failed requests
    seconds: float = 0.0


class LLMJudge:
    name = "llm"

    def __init__(self, endpoint: Endpoint, template: Path | str | Template, scale: Scale,
                 concurrency: int = CONCURRENCY, retries: int = RETRIES, cache_dir: Path | None = None,
                 backoff_s: float = 0.5) -> None:
        if concurrency < 1 or retries < 0:
            raise HarnessError("the llm judge needs concurrency >= 1 and retries >= 0")
        self.endpoint = endpoint
        # a Template: check_prompt's, read and checked once
        self.template = template if isinstance(template, Template) else Template.load(template)
        self.scale = scale
        self.concurrency = concurrency
        self.retries = retries
        self.backoff_s = backoff_s
        key = hashlib.sha256(json.dumps([endpoint.model, self.template.sha256, scale.name]).encode()).hexdigest()
        self.cache = AnswerCache(Path(cache_dir or cache_root() / "judge") / f"{key[:32]}.jsonl")
        self.stats = Stats()
        self._counts: dict[str, int] = {}
        self._answered_by: dict[str, int] = {}
        self._answered_between: list[str] = []  # the first and last answer's date, where the cache recorded them
        self._refused: list[Refused] = []
        self._reached = False
        self._client = None
        self._stats_lock = threading.Lock()

    # -- judging ------------------------------------------------------------------------

    def prompt(self, item: Item) -> str:
        return self.template.fill(item.fields, self.scale)

    def judge(self, items: Sequence[Item], progress: bool = False) -> list[Judgment]:
        from harness.progress import progress_bar

        # this call's, even if it stops half-way
        self.stats, self._counts, self._answered_by, self._refused = Stats(), {}, {}, []
        self._answered_between = []
        started = time.perf_counter()
        prompts = [self.prompt(item) for item in items]  # every template problem before any request
        import openai  # noqa: F401 (imported once here, not by eight threads at once)

        keys = [hashlib.sha256(prompt.encode("utf-8")).hexdigest() for prompt in prompts]
        results: list[Judgment | None] = [None] * len(items)
        todo: dict[str, list[int]] = {}  # prompt key -> the items asking it: one request per distinct prompt
        for index, (item, key) in enumerate(zip(items, keys)):
            if key in self.cache.answers:
                results[index] = self._judgment(item, self.cache.answers[key], cached=True)
            else:
                todo.setdefault(key, []).append(index)
        hits = len(items) - sum(map(len, todo.values()))
        answered_before = any(self.cache.endpoints.get(key) == self.endpoint.base_url
                              for key in keys if key in self.cache.answers)
        bar = progress_bar(f"judging ({self.endpoint.model})", "pair", total=len(items), shown=progress, initial=hits)
        bar.set_postfix_str(f"cache hits {hits}, 0.0 req/s", refresh=False)
        stop = threading.Event()
        questions: queue.SimpleQueue = queue.SimpleQueue()
        for asking in todo.values():
            questions.put(asking)
        answers: queue.SimpleQueue = queue.SimpleQueue()  # (the items asking, the answer or a fatal error)
        # a request is sent only while fewer than `concurrency` answers wait for the main thread, which
        # decides whether refusals are the endpoint's: a loaded machine lets no more requests out before it does
        ahead = threading.Semaphore(self.concurrency)

        def work() -> None:
            while not stop.is_set():
                if not ahead.acquire(timeout=0.1):
                    continue
                try:
                    asking = questions.get_nowait()
                except queue.Empty:
                    ahead.release()
                    return
                first = asking[0]
                try:
                    answer = self._ask_and_keep(prompts[first], keys[first], items[first].key, stop)
                except Refused as refusal:  # the main thread judges whether the pair or the endpoint failed
                    answer = refusal
                except BaseException as error:  # noqa: BLE001 (handed to the main thread, raised there)
                    answers.put((asking, error))
                    return
                answers.put((asking, answer))

        try:
            # daemon threads: on Ctrl-C the process ends at once, not after the requests in flight
            for number in range(min(self.concurrency, len(todo))):
                threading.Thread(target=work, name=f"judge-{number}", daemon=True).start()
            for _ in range(len(todo)):
                asking, answer = answers.get()
                ahead.release()
                if isinstance(answer, Refused):
                    self._refused.append(answer)
                    in_a_row = min(len(todo), max(self.concurrency, REFUSED_IN_A_ROW))
                    if not (self._reached or answered_before) and len(self._refused) >= in_a_row:
                        raise self._refused[0]  # every request refused: the endpoint's answer, not a pair's
                    answer = None
                if isinstance(answer, BaseException):
                    raise answer  # a fatal endpoint error
                for index in asking:
                    if answer is None:
                        results[index] = Judgment(items[index].key, None, "failed", "", cached=False)
                    else:
                        results[index] = self._judgment(items[index], answer, cached=False)
                bar.update(len(asking))
                rate = self.stats.requests / max(time.perf_counter() - started, 1e-9)
                bar.set_postfix_str(f"cache hits {hits}, {rate:.1f} req/s", refresh=False)
            self.cache.close()  # every answer is in; a stopped run's workers may still append
        except KeyboardInterrupt:
            judged = sum(result is not None and result.status != "failed" for result in results)
            raise Interrupted(f"{judged} of {len(items)} pairs judged, their answers cached; run the same "
                              "command again to resume (they are not asked again)") from None
        finally:
            stop.set()
            bar.close()
            self.stats.seconds = time.perf_counter() - started
        judgments = [result for result in results if result is not None]
        if judgments and all(judgment.status == "failed" for judgment in judgments):
            raise self._answered_none(len(judgments))
        self._counts = counts(judgments)
        answered = Counter(self.cache.endpoints.get(key, UNRECORDED) for key, result in zip(keys, results)
                           if result is not None and result.status != "failed")
        self._answered_by = dict(sorted(answered.items()))
        dates = [self.cache.dates[key] for key, result in zip(keys, results)
                 if result is not None and result.status != "failed" and key in self.cache.dates]
        self._answered_between = [min(dates), max(dates)] if dates else []
        return judgments

    def _judgment(self, item: Item, answer: str, cached: bool) -> Judgment:
        """The reply after its thinking (after_thinking) parsed; that text is the one quoted."""
        reply = after_thinking(answer)
        label = self.scale.parse(reply)
        return Judgment(item.key, label, "ok" if label is not None else "unparseable", reply, cached)

    def _answered_none(self, pairs: int) -> HarnessError:
        """The one-line error when every pair failed: the causes of the failed requests."""
        causes = sorted(self.stats.causes.items(), key=lambda cause: -cause[1])
        said = (f"{causes[0][0]} on all {counted(self.stats.requests, 'request')}" if len(causes) == 1 else
                f"{', '.join(f'{cause} on {n}' for cause, n in causes)} of its {self.stats.requests} requests")
        return HarnessError(f"the LLM endpoint at {self.endpoint.base_url} answered none of the "
                            f"{counted(pairs, 'pair')} (model {self.endpoint.model!r}): {said}; nothing is "
                            "cached, a rerun asks them again")

    def _client_for(self):
        if self._client is None:
            import openai

            self._client = openai.OpenAI(base_url=self.endpoint.base_url, timeout=self.endpoint.timeout_s,
                                         api_key=os.environ.get(self.endpoint.api_key_env) or "none",
                                         max_retries=0)  # retries are ours: counted, with our backoff
        return self._client

    def _count(self, cause: str | None = None, retry: bool = False) -> None:
        """One request sent (failed for `cause`, and retried if `retry`)."""
        with self._stats_lock:
            self.stats.requests += 1
            self.stats.retries += retry
            if cause is not None:
                self.stats.causes[cause] = self.stats.causes.get(cause, 0) + 1

    def _ask_and_keep(self, prompt: str, key: str, item_key: tuple[str, ...],
                      stop: threading.Event) -> str | None:
        """Asked in a worker thread and cached there: an answer that arrives is kept even
        when the main thread is interrupted meanwhile."""
        answer = self._ask(prompt, stop)
        if answer is not None:
            self.cache.put(key, answer, item_key, self.endpoint.base_url)
        return answer

    def _ask(self, prompt: str, stop: threading.Event) -> str | None:
        """The answer, or None after `retries` retries of timeouts, 429s and 5xx answers (or
        once `stop` is set: no retry is sent after an interrupt); Refused at once for a 400, 413 or 422."""
        import openai

        client = self._client_for()
        where = f"the LLM endpoint at {self.endpoint.base_url}"
        for attempt in range(self.retries + 1):
            wait_s = self.backoff_s * 2 ** attempt
            try:
                response = client.chat.completions.create(
                    model=self.endpoint.model, messages=[{"role": "user", "content": prompt}], temperature=0)
                self._reached = True
                answer = answer_text(response, self.endpoint.base_url)
                if after_thinking(answer).strip():
                    self._count()
                    return answer
                self._count(no_text(response, thought=bool(answer.strip())))  # not retried: the same again
                return None
            except openai.APITimeoutError:
                cause = "timeout"
            except openai.APIConnectionError:
                if not self._reached:
                    raise HarnessError(f"cannot reach {where}; is the server running?") from None
                cause = "connection"
            except (openai.RateLimitError, openai.InternalServerError) as error:
                cause = f"HTTP {error.status_code}"
                wait_s = max(wait_s, _retry_after(error.response))
            except openai.APIStatusError as error:
                if error.status_code in REFUSALS:
                    self._count(f"HTTP {error.status_code}")
                    raise Refused(self.endpoint, error.status_code, _message(error)) from None
                raise status_error(self.endpoint, error.status_code, f": {_message(error)}") from None
            except json.JSONDecodeError:  # HTTP 200 whose body the client could not read as JSON
                raise not_a_completion(self.endpoint.base_url, " (its body is not JSON)") from None
            retry = attempt < self.retries and not stop.wait(min(wait_s, BACKOFF_CAP_S))  # none after Ctrl-C
            self._count(cause, retry=retry)
            if not retry:
                break
        if cause == "timeout" and not self._reached and not stop.is_set():  # accepts, never answers
            raise HarnessError(f"{where} answered no request within its timeout ({self.endpoint.timeout_s:g} s, "
                               f"{counted(attempt + 1, 'try', 'tries')} of one pair); is it still loading the model? (--timeout)")
        return None

    # -- provenance ---------------------------------------------------------------------

    def provenance(self) -> dict:
        return {
            "judge": self.name, "model": self.endpoint.model, "endpoint": self.endpoint.base_url,
            "prompt": self.template.source, "prompt_sha256": self.template.sha256, "scale": self.scale.name,
            "temperature": 0, "date": now(), "counts": dict(self._counts), "answered_by": dict(self._answered_by),
            "requests": self.stats.requests, "retries": self.stats.retries, "failed_requests": dict(self.stats.causes),
            "cache": str(self.cache.path),
            **({"answered_between": list(self._answered_between)} if self._answered_between else {}),
            **({"refused_requests": len(self._refused), "refused_example": self._refused[0].example}
               if self._refused else {}),  # their pairs are among the failed; the first refusal quoted
        }


def _retry_after(response) -> float:
    try:
        return float(response.headers.get("retry-after", 0))
    except (TypeError, ValueError):
        return 0.0


def _message(error) -> str:
    body = error.body if isinstance(error.body, dict) else {}
    inner = body.get("error", body) if isinstance(body.get("error", body), dict) else {}
    return str(inner.get("message") or body.get("message") or error.message).splitlines()[0][:200]


JUDGES.add("llm", LLMJudge, "a chat model behind an OpenAI-compatible endpoint, cached on disk and retried", [
    Param("endpoint", Endpoint, desc="the endpoint: model, base URL, API key variable, timeout"),
    Param("template", Path | str | Template, desc="the prompt template file (or a Template check_prompt read)"),
    SCALE,
    Param("concurrency", AtLeast(1), CONCURRENCY, "requests at once"),
    Param("retries", AtLeast(0), RETRIES, "retries of a timeout, 429 or 5xx, with exponential backoff"),
    CACHE_DIR,
    Param("backoff_s", float, 0.5, "seconds before the first retry (doubled each time)"),
])
