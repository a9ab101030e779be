"""Entry point: python3 -m reports <compare|table|plot|html|noise> [options]."""

import argparse
import sys

from . import compare, htmlreport, noise, plot, table

COMMANDS = {
    "compare": (compare, "compare two or more runs: per-family tables, ratios, U test, geomean"),
    "table": (table, "pivot tables of one run, or several read as one (Markdown or CSV)"),
    "plot": (plot, "PNG/SVG plots of one or more runs"),
    "html": (htmlreport, "one self-contained HTML report of a run or a comparison"),
    "noise": (noise, "how well runs repeat: per family, the CV of each case over its repetitions"),
}


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m reports",
                                description="Reports for xfbench (Google Benchmark JSON) results.")
    sub = p.add_subparsers(dest="command", metavar="{compare,table,plot,html,noise}")
    sub.required = True
    for name, (mod, help_text) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_text, description=mod.__doc__.split("\n")[0])
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.main)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `... | head` is normal use
        return 0


if __name__ == "__main__":
    sys.exit(main())
