"""A hosted leaderboard: teams upload runs, the server validates them, scores them against
hidden qrels in the background and ranks them with significance tiers.

- config.py: the YAML config (tasks, teams with token hashes, quota, database, storage);
- store.py: the SQLAlchemy tables and the content-addressed file store (durable before 202);
- tasks.py: one task's checks, scoring and ranking, all through the harness's own
  validator, converter, evaluator and report code;
- service.py: accepting an upload and the background scorer;
- app.py: the FastAPI app (its middleware), built of api.py (the JSON API), web.py (the
  pages' routes; their Jinja2 templates are pages.py) and guard.py (tokens, sessions, CSRF,
  the rates of wrong tokens and refused uploads);
- cli_serve.py, cli_submit.py: `harness serve` and `harness submit`.

FastAPI, uvicorn, SQLAlchemy and Jinja2 are imported only by these modules (the `serve`
extra), so the rest of the harness never loads them.
"""

# the last of a submission's warnings where the server kept the first 200 (service.py), which
# `harness submit --wait` reads back to say how many there were
NOT_KEPT = "... and {} more warnings, not kept"
