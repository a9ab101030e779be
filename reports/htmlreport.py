"""`html`: one self-contained HTML file for a run (context, pivot tables, plots) or for a
comparison of several runs (context side by side, comparison tables, overlaid plots).

Self-contained means it opens from a mail attachment or a CI artifact with no network: CSS is
inline and each plot is an <img> with a base64 data URI; no scripts at all. Without matplotlib
the report is still written, minus the plots (one line on stderr says so).
"""

import base64
import datetime
import html
import os

from . import compare as compare_mod
from . import loader
from . import table as table_mod
from .render import Table, to_html

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;
max-width:1200px;color:#222;padding:0 1em}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.05em;margin:1.2em 0 .4em}
table{border-collapse:collapse;font-size:.85em;margin-bottom:.4em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right;white-space:nowrap}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
tr.geo td{font-weight:bold;background:#fafafa}
td.slow{background:#fde2e2}td.fast{background:#e2f5e2}
p.note{font-size:.8em;color:#555;margin:.1em 0}
.err{color:#a00}
figure{margin:1em 0}figure img{max-width:100%;border:1px solid #eee}
"""


def _figures_html(runs, image):
    """<figure>s with data URIs, or a note when matplotlib is missing."""
    try:
        from . import plot
        figs = plot.figures(runs)
    except ImportError as e:
        loader.warn(f"note: matplotlib is not installed ({e}); HTML written without plots")
        return ['<p class="note">Plots left out: matplotlib is not installed.</p>']
    mime = {"svg": "image/svg+xml", "png": "image/png"}[image]
    out = []
    for name, fig in figs:
        data = base64.b64encode(plot.to_bytes(fig, image)).decode("ascii")
        plot.close(fig)
        out.append(f'<figure><img alt="{name}" src="data:{mime};base64,{data}">'
                   f"<figcaption>{name}</figcaption></figure>")
    return out


def build(runs, image="svg", title=None, alpha=0.05):
    e = html.escape
    title = title or ("xfbench comparison: " + " vs ".join(r.label for r in runs)
                      if len(runs) > 1 else f"xfbench run: {runs[0].label}")
    parts = [f"<h1>{e(title)}</h1>",
             f'<p class="note">generated {datetime.date.today().isoformat()} by python3 -m reports html</p>']
    problems = [f"{r.path}: {m}" for r in runs for k, m in r.problems if k != "unsupported"]
    if problems:
        parts.append("<h2>Problems</h2><ul>" +
                     "".join(f'<li class="err">{e(p)}</li>' for p in problems) + "</ul>")
    if len(runs) > 1:
        res = compare_mod.compare(runs, alpha=alpha)
        parts.append("<h2>Device context</h2>")
        parts.append(to_html(res.context))
        parts.append("<h2>Comparison</h2>")
        parts += [to_html(t) for t in res.tables]
    else:
        run = runs[0]
        ctx = Table("Context", ["key", "value"])
        for k, vals, _ in loader.context_rows([run]):
            ctx.add([k, vals[0]])
        peaks = sorted(k for k in run.context if k.startswith("peak_"))
        for k in peaks + ["xfbench_plugins"]:
            if k in run.context:
                ctx.add([k, str(run.context[k])])
        parts.append("<h2>Device context</h2>")
        parts.append(to_html(ctx))
        parts.append("<h2>Tables</h2>")
        parts += [to_html(t) for t in table_mod.tables_for(run)]
    parts.append("<h2>Plots</h2>")
    parts += _figures_html(runs, image)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{e(title)}</title><style>{CSS}</style></head><body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def add_arguments(p):
    p.add_argument("files", nargs="+", help="one run, or several to compare (the first is the baseline)")
    p.add_argument("-o", "--out", default="reports/out/report.html", help="output HTML file")
    p.add_argument("--labels", help="comma-separated run labels (default: file names)")
    p.add_argument("--title", help="page title")
    p.add_argument("--image", choices=["svg", "png"], default="svg", help="embedded plot format")
    p.add_argument("--alpha", type=float, default=0.05, help="U test significance level")
    p.add_argument("--match-backend", metavar="MAP", default=None,
                   help="FROM=TO,... backend renames for matching (default as in compare)")


def main(args):
    try:
        bmap = loader.parse_backend_map(args.match_backend)
    except ValueError as e:
        loader.warn(f"error: {e}")
        return 2
    if len(args.files) == 1 and args.match_backend is None:
        bmap = {}  # a single run keeps its own backend names
    runs = loader.load_all(args.files, args.labels.split(",") if args.labels else None, bmap)
    doc = build(runs, image=args.image, title=args.title, alpha=args.alpha)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(doc)
    print(args.out)
    return 0 if all(r.ok for r in runs) else 2
