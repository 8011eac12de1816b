"""The web pages: Jinja2 templates with autoescaping on, so a run name or description is
always shown as text, never read as markup. Plots are `harness compare`'s own (PNG inline)."""

from __future__ import annotations

from functools import cache

LAYOUT = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body { font-family: sans-serif; margin: 1.5em auto; max-width: 1320px; padding: 0 1em; color: #222; }
nav a, nav form { margin-right: 1em; display: inline; }
.wide { overflow-x: auto; }  /* a table wider than the window scrolls in its box, not the page */
table { border-collapse: collapse; margin: 1em 0; font-size: 0.85em; }
th, td { border: 1px solid #bbb; padding: 0.25em 0.5em; text-align: right; }
td, .nowrap { white-space: nowrap; } td.l { white-space: normal; }
td.name { min-width: 7em; overflow-wrap: anywhere; }
@media (max-width: 1200px) { table { font-size: 0.8em; } th, td { padding: 0.25em 0.35em; } }
th { background: #eef; } .l { text-align: left; } .main { font-weight: bold; }
.errors { background: #fee; border: 1px solid #c00; padding: 0.5em 1em; }
.ok { background: #efe; border: 1px solid #090; padding: 0.5em 1em; }
.tier-top { background: #dfd; } .tier-tied { background: #f4f4d8; } .tier-untested { background: #eee; }
p.legend { font-size: 0.85em; color: #444; max-width: 60em; }
img { max-width: 100%; display: block; }
label { display: block; margin: 0.6em 0 0.2em; }
</style></head><body>
<nav><a href="/">Tasks</a>{% if team %}<a href="/submit">Submit</a><a href="/team">Team {{ team }}</a>
<form method="post" action="/logout"><input type="hidden" name="csrf" value="{{ csrf }}"><button>Log out</button></form>
{% else %}<a href="/login">Log in</a>{% endif %}</nav>
<h1>{{ title }}</h1>
{% block content %}{% endblock %}
</body></html>"""

TEMPLATES = {
    "layout.html": LAYOUT,
    "index.html": """{% extends "layout.html" %}{% block content %}
<table><tr><th class="l">task</th><th class="l">ranked by</th><th class="l">accepted formats</th></tr>
{% for task in tasks %}<tr><td class="l"><a href="/tasks/{{ task.name }}">{{ task.title }}</a></td>
<td class="l">{{ task.main_measure }}</td><td class="l">{{ task.formats|join(", ") }}</td></tr>{% endfor %}
</table>{% endblock %}""",
    "leaderboard.html": """{% extends "layout.html" %}{% block content %}
{% set note = board.unranked|unranked %}{% if not board.rows %}<p>No scored runs yet.</p>{% endif %}
{% if note %}<p id="unranked">{{ note }}</p>{% endif %}
{% if board.rows %}
<div class="wide"><table id="leaderboard"><thead><tr><th>#</th><th class="l">team</th><th class="l">run</th><th class="l">description</th>
{% for m in board.measures %}<th{% if m == board.main_measure %} class="main"{% endif %}>{{ m|breakable }}</th>{% endfor %}
<th class="l">vs. top ({{ board.main_measure }})</th><th>p (Holm)</th><th class="l">submitted (UTC)</th></tr></thead><tbody>
{% for row in board.rows %}<tr class="tier-{{ row.tier }}"><td>{{ row.rank }}</td><td class="l">{{ row.team }}</td>
<td class="l name">{{ row.run_name }}</td><td class="l name">{{ row.description }}</td>
{% for m in board.measures %}<td{% if m == board.main_measure %} class="main"{% endif %}>{% if row.measures[m] is none %}undefined{% else %}{{ "%.4f"|format(row.measures[m]) }}{% endif %}</td>{% endfor %}
<td class="l">{{ tiers[row.tier] }}</td><td>{% if row.p_adjusted is not none %}{{ "%.4f"|format(row.p_adjusted) }}{% endif %}</td>
<td class="l"><span class="nowrap">{{ row.submitted[:10] }}</span> <span class="nowrap">{{ row.submitted[11:19] }}</span></td></tr>{% endfor %}</tbody></table></div>
<p class="legend">Each run is tested against the top run on every measure; the table shows the test on
{{ board.main_measure }}: green, the top run; yellow, not significantly different from it; white,
significantly lower{% if board.rows|selectattr("tier", "equalto", "untested")|first %}; grey, not tested (on
one query: no spread to test a difference against){% endif %}. Test: {{ board.legend }}</p>
{% for note in board.notes %}<p class="legend">{{ note }}</p>{% endfor %}
<h2>{{ board.main_measure }} by turn depth (top {{ board.depth.means|length }} runs)</h2>
{{ depth_plot }}
{% endif %}{% endblock %}""",
    "login.html": """{% extends "layout.html" %}{% block content %}
{% if error %}<div class="errors" id="errors">{{ error }}</div>{% endif %}
<form method="post" action="/login"><input type="hidden" name="csrf" value="{{ login_csrf }}">
<label for="token">Team token</label><input id="token" name="token" type="password" size="50" autocomplete="off">
<button type="submit">Log in</button></form>{% endblock %}""",
    "submit.html": """{% extends "layout.html" %}{% block content %}
{% if detail %}<div class="errors" id="errors"><p>{{ detail }}</p>{% if messages %}<ul>
{% for m in messages %}<li>{{ m.file }}{% if m.line is not none %}:{{ m.line }}{% endif %}{% if m.turn %} turn {{ m.turn }}{% endif %} [{{ m.check }}]: {{ m.message }}</li>
{% endfor %}</ul>{% endif %}</div>{% endif %}
<form method="post" action="/submit" enctype="multipart/form-data"><input type="hidden" name="csrf" value="{{ csrf }}">
<label for="task">Task</label><select id="task" name="task">{% for task in tasks %}
<option value="{{ task.name }}"{% if task.name == chosen %} selected{% endif %}>{{ task.title }}</option>{% endfor %}</select>
<label for="file">Run file</label><input id="file" name="file" type="file">
<label for="description">Description</label><textarea id="description" name="description" rows="3" cols="60">{{ description }}</textarea>
<p><button type="submit">Submit</button></p></form>
<p class="legend">{{ quota }} accepted submissions per team per day (UTC), across all tasks; the same file again is the same submission.
On a task that hides per-turn scores, an upload refused for its answers counts too (its refusal says so).</p>
{% endblock %}""",
    "error.html": """{% extends "layout.html" %}{% block content %}
<div class="errors" id="errors">{{ detail }}</div>
<p><a href="{{ back }}">Back to {{ back_to }}</a></p>{% endblock %}""",
    "team.html": """{% extends "layout.html" %}{% block content %}
{% if accepted %}<div class="ok" id="accepted">Submission {{ accepted }} {% if answer == "duplicate" %}was already received: the same
file again is the same submission (its first description is kept).{% elif answer == "restored" %}was already received; its file,
which the server had lost, is stored again (and scored, where it had failed for want of it).{% else %}is stored and queued for scoring.{% endif %}</div>{% endif %}
<table id="submissions"><thead><tr><th class="l">id</th><th class="l">task</th><th class="l">run</th><th class="l">description</th>
<th class="l">status</th><th class="l">scores</th><th>warnings</th><th class="l">submitted</th></tr></thead><tbody>
{% for s in submissions %}<tr><td class="l">{{ s.id }}</td><td class="l"><a href="/tasks/{{ s.task }}">{{ s.task }}</a></td>
<td class="l">{{ s.run_name }}</td><td class="l">{{ s.description }}</td><td class="l">{{ s.status }}</td>
<td class="l">{% if s.means %}{% for m, v in s.means.items() %}{{ m }} {{ "%.4f"|format(v) }}{% if not loop.last %}, {% endif %}{% endfor %}{% endif %}{% if s.error %} {{ s.error }}{% endif %}</td>
<td>{{ s.warnings|length }}{% if s.warnings|length >= max_messages %}+{% endif %}</td><td class="l">{{ s.created_at.isoformat(timespec="seconds") }}Z</td></tr>{% endfor %}
</tbody></table>{% endblock %}""",
}

# a board's unranked submissions by status (Service.board), as its page says them
UNRANKED = {
    "queued": "waiting to be scored",
    "stale": "held off the board until scored again with the task's current settings",
    "failed": "whose scoring failed",
    "withdrawn": "withdrawn by the organisers",
}


def unranked(counts: dict[str, int]) -> str:
    """'Not ranked: 1 run waiting to be scored; 2 runs held off the board ...'; '' when none."""
    from harness.errors import counted

    said = [f"{counted(counts[status], 'run')} {words}" for status, words in UNRANKED.items() if counts.get(status)]
    return f"Not ranked: {'; '.join(said)}." if said else ""


TIERS = {
    "top": "top run",
    "tied": "not significantly different",
    "below": "significantly lower",
    "above": "significantly higher",
    "untested": "not tested (one query)",
}


@cache
def environment():
    from jinja2 import DictLoader, Environment

    from markupsafe import Markup, escape

    environment = Environment(loader=DictLoader(TEMPLATES), autoescape=True)
    # a long measure name (AP(rel=2)@1000) may break before its cutoff, so its column can be narrow
    environment.filters["breakable"] = lambda name: Markup(str(escape(name)).replace("@", "<wbr>@"))
    environment.filters["unranked"] = unranked
    return environment


def render(name: str, **values) -> str:
    from harness.serve.tasks import MAX_MESSAGES

    return environment().get_template(name).render(tiers=TIERS, max_messages=MAX_MESSAGES, **values)


def depth_plot(board: dict) -> str:
    """The per-turn-depth curves of `harness compare --format html`, for the top runs."""
    from markupsafe import Markup

    from harness.report.html import RUN_COLOURS, depth_curves

    if not board.get("depth"):
        return Markup("")
    runs = board["depth"].means  # ranked; a hosted board has no baseline, so none is grey
    colours = {run: RUN_COLOURS[i % len(RUN_COLOURS)] for i, run in enumerate(runs)}
    return Markup(depth_curves([board["depth"]], colours, counted=board["depth_counts"]))
