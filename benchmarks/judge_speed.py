"""LLM judge throughput against a local OpenAI-protocol server: judgments/s, the overhead per
judgment beyond the server's own latency, and the rerun that sends nothing.

    .venv/bin/python benchmarks/judge_speed.py [--pairs 2000] [--latency 0.05] [--concurrency 8]

The server is tests/llm_server.py on 127.0.0.1 in its judge mode, answering every prompt after
`--latency` seconds with the label the iKAT organisers' GPT-4 judge gave the pair in their 2024
pool file (../shared, or HARNESS_SHARED); queries and conversations are the real iKAT 2024
topics, passages stand-ins naming their ids (ClueWeb22 is not here). The competitor is the bare
`openai` client asking the same prompts from the same number of threads, with no cache, no
parsing and no bookkeeping; the ideal is the server's latency alone (concurrency / latency
requests per second). Printed per setting: judgments/s of the judge and of the bare client,
their ratio, and the judge's overhead per judgment beyond the server's latency,
(wall x concurrency / pairs) - latency; then the rerun from the cache: requests sent (must be
0) and judgments/s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.judge.llm import LLMJudge, default_prompt
from harness.judge.model import Item
from harness.judge.scales import RELEVANCE_0_4
from harness.queries.llm import Endpoint, history_text
from harness.topics import load

ROOT = Path(__file__).resolve().parents[1]
POOL = "data/ikat/2024/cone-rag/resources/automatic_resources/llm-gpt4-pool-depth-30.txt"


def pool_items(limit: int) -> tuple[list[Item], dict]:
    """Items for the first `limit` pool pairs, and the server's judge config answering them."""
    shared = Path(os.environ.get("HARNESS_SHARED", ROOT.parent / "shared"))
    turns = {turn.qid: (conversation, index) for conversation in load("ikat2024").conversations
             for index, turn in enumerate(conversation.turns)}
    items, labels = [], {}
    for line in (shared / POOL).read_text(encoding="utf-8").splitlines()[:limit]:
        qid, _, docid, grade = line.split()
        conversation, index = turns[qid]
        needles = [conversation.turns[i].utterance for i in range(index + 1)]
        labels.setdefault(docid, []).append([*needles, grade])
        items.append(Item((qid, docid), {"query": conversation.turns[index].utterance,
                                         "context": history_text(conversation, index) or "(none)",
                                         "ptkb": "\n".join(f"- {s.text}" for s in conversation.personal),
                                         "passage": f"[passage {docid}] stand-in text for {docid}"}))
    return items, {"labels": labels}


def serve(folder: Path, config: dict) -> tuple[subprocess.Popen, str, Path]:
    (folder / "judge.json").write_text(json.dumps(config), encoding="utf-8")
    log = folder / "requests.jsonl"
    log.write_text("")
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "llm_server.py"), str(log),
                               str(folder / "judge.json")], stdout=subprocess.PIPE, text=True)
    return server, f"http://127.0.0.1:{int(server.stdout.readline())}/v1", log


def bare_client(base_url: str, prompts: list[str], concurrency: int) -> float:
    """Seconds for the bare openai client to ask every prompt from `concurrency` threads."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="none", max_retries=0)
    ask = lambda prompt: client.chat.completions.create(  # noqa: E731
        model="gpt-4-as-recorded", messages=[{"role": "user", "content": prompt}], temperature=0)
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(ask, prompts))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--latency", type=float, nargs="+", default=[0.0, 0.05],
                        help="the server's latency per answer, seconds (several: one row each)")
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    items, config = pool_items(args.pairs)
    print(f"{len(items)} pairs of the iKAT 2024 GPT-4 pool, concurrency {args.concurrency}")
    print(f"{'latency s':>9}  {'judge/s':>8}  {'bare/s':>8}  {'judge/bare':>10}  {'ideal/s':>8}  "
          f"{'overhead ms/judgment':>20}")
    for latency in args.latency:
        with tempfile.TemporaryDirectory() as folder:
            server, base_url, log = serve(Path(folder), {**config, "delay_s": latency})
            try:
                endpoint = Endpoint("gpt-4-as-recorded", base_url, default_prompt())
                judge = LLMJudge(endpoint, default_prompt(), RELEVANCE_0_4, concurrency=args.concurrency,
                                 cache_dir=Path(folder) / "cache")
                bare = bare_client(base_url, [judge.prompt(item) for item in items[:200]], args.concurrency)  # warm
                bare = bare_client(base_url, [judge.prompt(item) for item in items], args.concurrency)
                start = time.perf_counter()
                judgments = judge.judge(items)
                wall = time.perf_counter() - start
                assert all(j.status == "ok" for j in judgments), "a recorded label did not come back"
                ideal = args.concurrency / latency if latency else float("inf")
                overhead = (wall * args.concurrency / len(items) - latency) * 1000
                print(f"{latency:>9.3f}  {len(items) / wall:>8.1f}  {len(items) / bare:>8.1f}  "
                      f"{bare / wall:>10.2f}  {ideal:>8.1f}  {overhead:>20.2f}")
                sent = len(log.read_text().splitlines())
                rerun = LLMJudge(endpoint, default_prompt(), RELEVANCE_0_4, concurrency=args.concurrency,
                                 cache_dir=Path(folder) / "cache")
                start = time.perf_counter()
                rerun.judge(items)
                cached = time.perf_counter() - start
                again = len(log.read_text().splitlines()) - sent
                print(f"{'':>9}  rerun: {again} requests sent, {len(items) / cached:,.0f} judgments/s from the cache "
                      f"(cache loaded in the judge's constructor)")
            finally:
                server.terminate()
                server.wait(timeout=10)


if __name__ == "__main__":
    main()
