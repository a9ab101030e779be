#!/usr/bin/env python3
"""The floors of the tree (README, "Writing a plugin"): each #include of xfbench's own headers points
to the same floor or one below it, never up; no plugin includes another plugin's folder.

  harness (SDK) < kernels (operations) < kernels/comm < kernels/models < plugins

Exit 0 with a summary line, 1 listing each include that points up. Run from anywhere:
  tests/setup/check_floors.py [repository root]
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else __file__).resolve()
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


def main() -> int:
    bad, checked = [], 0
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
    print(f"floors: {checked} includes checked, none points up")
    return 0


if __name__ == "__main__":
    sys.exit(main())
