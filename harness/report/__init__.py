"""The last step of the flow: evaluations -> leaderboards, breakdowns and reports.

- stats.py: paired tests, multiple-testing corrections, effect sizes, intervals
- compare.py: runs aligned on queries, one corrected test family -> `Leaderboard`
- breakdown.py: per-group means (turn depth, conversation, intent or any qid grouping)
- arena.py: Elo / Bradley-Terry ratings from pairwise votes, satisfaction correlation
- formats.py, markdown.py, html.py: a `Report` written as csv, json, md or html
- cli_compare.py, cli_arena.py: `harness compare` and `harness arena`
"""
