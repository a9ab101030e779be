"""A tiny table type and its renderers (terminal text, Markdown, CSV, HTML).

`compare` and `table` build `Table`s; `html` renders the same objects, so every output shows the
same numbers. Cells are already-formatted strings; `values` optionally keeps the raw numbers for
CSV so a spreadsheet gets full precision.
"""

import csv
import html
import io
import re


class Table:
    def __init__(self, title, headers, rows=None, notes=None, values=None):
        self.title = title
        self.headers = list(headers)
        self.rows = rows or []        # list of lists of str
        self.values = values          # optional parallel list of lists of raw values (for CSV)
        self.notes = notes or []      # lines printed under the table

    def add(self, row, raw=None):
        self.rows.append([str(c) for c in row])
        if raw is not None:
            if self.values is None:
                self.values = []
            self.values.append(raw)

    def slug(self):
        return re.sub(r"[^A-Za-z0-9]+", "_", self.title).strip("_").lower() or "table"


def _is_numeric_cell(s):
    return bool(re.match(r"^[-+×]?[\d.]+", s.strip()))


def to_text(table):
    widths = [len(h) for h in table.headers]
    for row in table.rows:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))

    def line(cells):
        out = []
        for i, c in enumerate(cells):
            # numbers right-aligned so digits line up; the first column (case) left-aligned
            out.append(c.rjust(widths[i]) if i and _is_numeric_cell(c) else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [table.title, line(table.headers), "  ".join("-" * w for w in widths)]
    lines += [line(r) for r in table.rows]
    lines += table.notes
    return "\n".join(lines) + "\n"


def _md_escape(s):
    return s.replace("|", "\\|")


def to_markdown(table):
    lines = [f"### {table.title}", ""]
    lines.append("| " + " | ".join(_md_escape(h) for h in table.headers) + " |")
    # right-align columns of numbers, left-align text columns (e.g. error messages)
    align = ["---"]
    for i in range(1, len(table.headers)):
        cells = [r[i] for r in table.rows if i < len(r) and r[i] not in ("—", "", "error")]
        numeric = not cells or sum(_is_numeric_cell(c) for c in cells) * 2 >= len(cells)
        align.append("---:" if numeric else "---")
    lines.append("|" + "|".join(align) + "|")
    for r in table.rows:
        lines.append("| " + " | ".join(_md_escape(c) for c in r) + " |")
    if table.notes:
        lines.append("")
        lines += table.notes
    return "\n".join(lines) + "\n"


def to_csv(table, with_title=False):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if with_title:
        w.writerow([f"# {table.title}"])
    w.writerow(table.headers)
    rows = table.values if table.values is not None else table.rows
    for r in rows:
        w.writerow(["" if v is None else v for v in r])
    return buf.getvalue()


def to_html(table):
    e = html.escape
    out = [f"<h3>{e(table.title)}</h3>", "<table>", "<thead><tr>"]
    out += [f"<th>{e(h)}</th>" for h in table.headers]
    out.append("</tr></thead><tbody>")
    for r in table.rows:
        cls = ' class="geo"' if r and r[0].startswith("geomean") else ""
        cells = []
        for i, c in enumerate(r):
            # colour significant changes so they stand out in the report
            style = ""
            if "▼" in c:
                style = ' class="slow"'
            elif "▲" in c:
                style = ' class="fast"'
            cells.append(f"<td{style}>{e(c)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    out += [f"<p class=\"note\">{e(n)}</p>" for n in table.notes]
    return "\n".join(out) + "\n"


RENDERERS = {"text": to_text, "md": to_markdown, "markdown": to_markdown, "csv": to_csv,
             "html": to_html}
