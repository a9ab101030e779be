"""A tiny table type and its renderers (terminal text, Markdown, CSV, HTML).

`compare` and `table` build `Table`s; `html` renders the same objects, so every output shows the
same numbers. Cells are already-formatted strings; `values` optionally keeps the raw numbers for
CSV so a spreadsheet gets full precision. A header may hold a line break: two lines in text, one
in Markdown, `<br>` in HTML.
"""

import csv
import html
import io
import math
import re
import textwrap

# Cells that hold no measured value: a table of nothing else is empty (hidden by `table`/`html`).
NO_VALUE = ("—", "n/a", "")


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

    def empty(self):
        """No row holds a value: every cell after the first is `—` or `n/a` (e.g. a one-GPU
        run's P2P tables)."""
        return all(c.strip() in NO_VALUE for r in self.rows for c in r[1:])


def short_names(names, sep="/"):
    """(the names without the parts every one of them has, those parts): shown in a table's
    title instead of in each row. The names as they are when fewer than two or when shortening
    would make two equal or one empty."""
    split = [n.split(sep) for n in names]
    if len(split) < 2:
        return list(names), []
    common = [p for p in split[0] if all(p in s for s in split[1:])]
    short = [sep.join(p for p in s if p not in common) for s in split]
    if not common or any(not n for n in short) or len(set(short)) < len(short):
        return list(names), []
    return short, common


def _ellipsize(s, width):
    """`s` cut in the middle to `width` characters: 'reports/res…/xf_headline.json'."""
    if len(s) <= width:
        return s
    head = width // 2
    return s[:head] + "…" + s[len(s) - (width - 1 - head):]


def _is_numeric_cell(s):
    return bool(re.match(r"^[-+×]?[\d.]+", s.strip()))


def to_text(table, width=None):
    """Aligned columns for a terminal. With `width`, the widest text columns (case names, file
    paths) are cut in the middle with `…` until each line fits, numbers never; notes wrap."""
    heads = [h.split("\n") for h in table.headers]
    nhead = max((len(h) for h in heads), default=1)
    heads = [[""] * (nhead - len(h)) + h for h in heads]  # bottom-aligned
    widths = [max(len(x) for x in h) for h in heads]
    for row in table.rows:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))
    if width:
        # a column narrows down to its longest number or change (`within noise (+0.3%)`): only
        # names, paths and headers are cut
        least = [max([len(r[i]) for r in table.rows if i < len(r) and i and
                      (_is_numeric_cell(r[i]) or "%" in r[i])] + [6 if i else 16])
                 for i in range(len(widths))]
        while sum(widths) + 2 * (len(widths) - 1) > width:
            cut = [i for i in range(len(widths)) if widths[i] > least[i]]
            if not cut:
                break
            i = max(cut, key=lambda i: widths[i] - least[i])
            widths[i] -= 1

    def line(cells):
        out = []
        for i, c in enumerate(cells):
            c = _ellipsize(c, widths[i])
            # numbers right-aligned so digits line up; the first column (case) left-aligned
            out.append(c.rjust(widths[i]) if i and _is_numeric_cell(c) else c.ljust(widths[i]))
        return "  ".join(out).rstrip()

    lines = [table.title] + [line([h[k] for h in heads]) for k in range(nhead)]
    lines.append("  ".join("-" * w for w in widths).rstrip())
    lines += [line(r) for r in table.rows]
    for n in table.notes:
        lines += textwrap.wrap(n, width, subsequent_indent="  ") if width else [n]
    return "\n".join(lines) + "\n"


def _md_escape(s):
    return s.replace("|", "\\|")


def to_markdown(table):
    lines = [f"### {table.title}", ""]
    lines.append("| " + " | ".join(_md_escape(h.replace("\n", " ")) for h in table.headers) + " |")
    # right-align columns of numbers, left-align text columns (e.g. error messages)
    align = ["---"]
    for i in range(1, len(table.headers)):
        cells = [r[i] for r in table.rows if i < len(r) and r[i] not in ("—", "", "error", "invalid")]
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
    w.writerow([h.replace("\n", " ") for h in table.headers])
    rows = table.values if table.values is not None else table.rows
    for r in rows:  # None: missing; NaN: an invalid value (loader.INVALID)
        w.writerow(["" if v is None else "invalid" if isinstance(v, float) and math.isnan(v) else v
                    for v in r])
    return buf.getvalue()


def _cell_class(text):
    """CSS class of a value cell: significant changes coloured, marked and invalid values flagged."""
    if "▼" in text:
        return "slow"
    if "▲" in text:
        return "fast"
    if text.startswith("invalid"):
        return "invalid"
    number = text.split(" (")[0]  # `803.0~ (1.10×)`: the marks follow the number
    if "~" in number:
        return "noisy"
    if "†" in number:
        return "throttled"
    return ""


def to_html(table, anchor=None):
    """<h3> and the table in a <div> that scrolls sideways when it is wider than the page."""
    e = html.escape
    ident = f' id="{e(anchor)}"' if anchor else ""
    out = [f"<h3{ident}>{e(table.title)}</h3>", '<div class="scroll"><table>', "<thead><tr>"]
    words = [i and all(not _is_numeric_cell(r[i]) for r in table.rows if i < len(r)
                       and r[i] not in NO_VALUE and not _cell_class(r[i])) and
             any(i < len(r) and r[i] not in NO_VALUE for r in table.rows)
             for i in range(len(table.headers))]
    for h, w in zip(table.headers, words):
        text = "<br>".join(e(x) for x in h.split("\n"))
        out.append(f'<th class="text">{text}</th>' if w else f"<th>{text}</th>")
    out.append("</tr></thead><tbody>")
    for r in table.rows:
        cls = ' class="geo"' if r and r[0].startswith("geomean") else ""
        cells = []
        for i, c in enumerate(r):
            style = _cell_class(c) if i else ""
            if i and not style and not _is_numeric_cell(c) and c not in NO_VALUE:
                style = "text"  # words (a case, a reason) read from the left
            cells.append(f'<td class="{style}">{e(c)}</td>' if style else f"<td>{e(c)}</td>")
        out.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    out.append("</tbody></table></div>")
    out += [f"<p class=\"note\">{e(n)}</p>" for n in table.notes]
    return "\n".join(out) + "\n"


RENDERERS = {"text": to_text, "md": to_markdown, "markdown": to_markdown, "csv": to_csv,
             "html": to_html}
