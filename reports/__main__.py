"""Entry point: python3 -m reports <compare|table|plot|html|noise|kernels|plans> [options].

Exit codes: 0 fine; 1 a gate failed (compare --fail-if-slower, noise --check); 2 bad input: an
argument, an input file or an output that cannot be used, each one line on stderr; 3 a bug in
reports (one line saying where). No Python traceback in any case.
"""

import argparse
import os
import sys
import traceback

from . import compare, htmlreport, kernels, loader, noise, plans, plot, table

COMMANDS = {
    "compare": (compare, "compare two or more runs: per-family tables, ratios, U test, geomean"),
    "table": (table, "pivot tables of one run, or several read as one (Markdown or CSV)"),
    "plot": (plot, "PNG/SVG plots of one or more runs"),
    "html": (htmlreport, "one self-contained HTML report of a run or a comparison"),
    "noise": (noise, "how well runs repeat: per family, the CV of each case over its repetitions"),
    "kernels": (kernels, "where a case's time goes, kernel by kernel, from ncu's per-kernel times"),
    "plans": (plans, "the GEMM kernels a run chose (XFBENCH_GEMM_PLANS files), or two runs' differences"),
}


class Parser(argparse.ArgumentParser):
    """argparse with its usage errors as one line (BadInput) instead of the usage and the error."""

    def error(self, message):
        raise loader.BadInput(message)


def main(argv=None):
    p = Parser(prog="python3 -m reports",
               description="Reports for xfbench (Google Benchmark JSON) results.")
    sub = p.add_subparsers(dest="command", metavar="{compare,table,plot,html,noise,kernels,plans}")
    sub.required = True
    for name, (mod, help_text) in COMMANDS.items():
        # the module's whole docstring, as written: its first line alone stops mid-sentence
        sp = sub.add_parser(name, help=help_text, description=mod.__doc__.strip(),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.main)
    try:
        args = p.parse_args(argv)
        rc = args.func(args)
        loader.write_stdout("")  # flushes: a full disk is an error here, not at exit
        return rc
    except BrokenPipeError:  # `... | head` is normal use
        return 0
    except loader.BadInput as e:
        loader.warn(f"error: {e}")
        return 2
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug: one line that says where, not a traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        loader.warn(f"error: internal error in reports, please report it: {type(e).__name__}: {e} "
                    f"({os.path.basename(where.filename)}:{where.lineno})")
        return 3


if __name__ == "__main__":
    sys.exit(main())
