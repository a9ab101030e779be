#!/usr/bin/env python3
"""The floors of the tree (README, "Writing a plugin"): each #include of xfbench's own headers points
to the same floor or one below it, never up; no plugin includes another plugin's folder.

  harness (SDK) < kernels (operations) < kernels/comm < kernels/models < plugins

Exit 0 with a summary line, 1 listing each include that points up. Run from anywhere:
  tests/setup/check_floors.py [repository root]
  tests/setup/check_floors.py --graph [repository root]   the include graph between the floors, as
                                                           the README draws it
"""
import pathlib
import re
import sys

GRAPH = "--graph" in sys.argv[1:]
ARGS = [a for a in sys.argv[1:] if a != "--graph"]
ROOT = pathlib.Path(ARGS[0] if ARGS else __file__).resolve()
if ROOT.is_file():
    ROOT = ROOT.parents[2]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCES = ("*.cpp", "*.cu", "*.hpp", "*.cuh", "*.h")


def floor_of(path: str) -> int:
    """The floor of a repository path (or of an include spelled from the root or harness/include)."""
    if path.startswith(("harness/", "xfbench/")):
        return 0
    if path.startswith("kernels/models/"):
        return 3
    if path.startswith("kernels/comm/"):
        return 2
    if path.startswith("kernels/"):
        return 1
    if path.startswith("plugins/"):
        return 4
    return -1  # a folder's own relative include, a system header, tests: not a floor


NAMES = ["harness/ (the SDK)", "kernels/ (operations)", "kernels/comm/", "kernels/models/",
         "plugins/<name>/"]


def graph(edges) -> str:
    """Each floor and the floors its files include (one arrow per pair, however many includes)."""
    lines = []
    for mine in range(len(NAMES) - 1, -1, -1):
        below = sorted((t for (m, t) in edges if m == mine and t != mine), reverse=True)
        lines.append(f"{mine} {NAMES[mine]:<22} -> " + (", ".join(str(t) for t in below) or "-"))
    return "\n".join(lines)


def main() -> int:
    bad, checked, edges = [], 0, set()
    for pattern in SOURCES:
        for f in sorted(ROOT.glob(f"**/{pattern}")):
            rel = f.relative_to(ROOT).as_posix()
            if rel.startswith(("build", "tests/", ".")):
                continue
            mine = floor_of(rel)
            if mine < 0:
                continue
            for inc in INCLUDE.findall(f.read_text(errors="replace")):
                checked += 1
                theirs = floor_of(inc)
                if theirs >= 0:
                    edges.add((mine, theirs))
                if theirs > mine:
                    bad.append(f"{rel}: includes {inc} (floor {theirs} above {mine})")
                # a plugin's own folder, or plugins/shared/*, never another plugin's
                if mine == 4 and inc.startswith("plugins/"):
                    own = "/".join(rel.split("/")[:2])
                    if not inc.startswith((own + "/", "plugins/shared/")):
                        bad.append(f"{rel}: includes another plugin's {inc}")
    if bad:
        print("\n".join(bad))
        return 1
    if GRAPH:
        print(graph(edges))
        return 0
    print(f"floors: {checked} includes checked, none points up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
