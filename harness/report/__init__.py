"""The last step of the flow: evaluations -> leaderboards, breakdowns and reports.

- stats.py: paired tests, multiple-testing corrections, effect sizes, intervals
- compare.py: runs aligned on queries, one corrected test family -> `Leaderboard`
- breakdown.py: per-group means (turn depth, conversation, intent or any qid grouping)
- arena.py: Elo / Bradley-Terry ratings from pairwise votes, satisfaction correlation
- model.py: the `Report` record; markdown.py, html.py: its Markdown and HTML renderings
- formats.py: the registry of output formats (csv, json, md, html) and `write_report`
- cli_compare.py, cli_arena.py: `harness compare` and `harness arena`
"""
