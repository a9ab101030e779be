#!/usr/bin/env bash
# Runs every command block a user would copy from the READMEs, as the READMEs spell it, against the
# built tree. The rule the READMEs follow:
#   - every fenced block names its language: ```sh for commands, ```text (or cpp, cmake, ...) for
#     anything else; a fence without one fails here, so no command block goes untested unnoticed;
#   - an ```sh block (also bash, shell) is run: its lines as one `bash -e -o pipefail`
#     script from a copy of the repository root, with the build's bin folder first on PATH (so a bare
#     `xfbench` is build/release/bin/xfbench), and it must exit 0 within the time limit; without a
#     GPU, `xfbench` exits 4 whenever it selects GPU cases, so only listing, --help and --version
#     commands pass;
#   - a block that needs a GPU, a long time, or files a user makes first, carries on the line just
#     before its fence a visible reason:  <!-- ci: skip (needs a GPU) -->
#     and is skipped, its reason printed. A block neither marked nor passing fails this test.
# Blocks run in a scratch copy of the tree (about 11 MB; build folders linked, not copied), so what
# they write (reports/out/, *.json, a chart over a committed one) never lands in the tree.
#   tests/setup/readme_commands.sh [--dry-run] [FILE.md ...]   (default: README.md reports/README.md)
#   --dry-run: check the rule and print what would run and what is skipped; run nothing
#   XFBENCH_BIN_DIR (default build/release/bin), README_BLOCK_TIMEOUT (seconds per block, 60)
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
dry_run=0
if [ "${1:-}" = --dry-run ]; then dry_run=1; shift; fi
files=("$@")
[ "${#files[@]}" -gt 0 ] || files=("$repo/README.md" "$repo/reports/README.md")
bin_dir="$(realpath -m "${XFBENCH_BIN_DIR:-$repo/build/release/bin}")"
block_timeout="${README_BLOCK_TIMEOUT:-60}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# extract FILE: writes each command block of FILE to $work/blocks/NNNN.sh with NNNN.where
# ("FILE:LINE") and, for a marked block, NNNN.skip (the reason); prints one line per rule broken.
mkdir -p "$work/blocks"
extract() {
  awk -v shown="$2" -v out="$work/blocks" -v start="$(find "$work/blocks" -name '*.where' | wc -l)" '
    function fail(line, why) { printf "%s:%d: %s\n", shown, line, why; bad = 1 }
    BEGIN { n = start }
    !inside && /^[ \t]*(```|~~~)/ {
      match($0, /^[ \t]*/); indent = RLENGTH
      fence = substr($0, indent + 1, 3)
      info = substr($0, indent + 4); sub(/^[ \t`~]*/, "", info); split(info, word, /[ \t{]/)
      lang = tolower(word[1]); inside = 1; open = FNR
      if (lang == "") fail(FNR, "a fenced block without a language: write ```sh for commands a user copies, ```text for anything else")
      command = (lang == "sh" || lang == "bash" || lang == "shell")
      if (command) {
        name = sprintf("%s/%04d", out, ++n)
        printf "%s:%d\n", shown, FNR > (name ".where")
        printf "" > (name ".sh")
        if (marked && marked == FNR - 1) printf "%s\n", reason > (name ".skip")
      } else if (marked && marked == FNR - 1) fail(marked, "a ci: skip mark before a block that is not ```sh")
      marked = 0
      next
    }
    inside && /^[ \t]*(```|~~~)[ \t]*$/ && index($0, fence) {
      inside = 0
      if (command) { close(name ".sh"); close(name ".where"); close(name ".skip") }
      next
    }
    inside {
      if (command) {
        line = $0
        if (substr(line, 1, indent) ~ /^[ \t]*$/) line = substr(line, indent + 1)
        print line > (name ".sh")
      }
      next
    }
    marked && marked == FNR - 1 {
      fail(marked, "a ci: skip mark must be on the line just before an ```sh fence"); marked = 0
    }
    /^[ \t]*<!--[ \t]*ci:/ {
      if (match($0, /^<!-- ci: skip \([^()]*[^() \t][^()]*\) -->[ \t]*$/)) {
        marked = FNR; reason = $0
        sub(/^<!-- ci: skip \(/, "", reason); sub(/\) -->[ \t]*$/, "", reason)
      } else fail(FNR, "a ci: mark must read exactly: <!-- ci: skip (REASON) -->")
    }
    END {
      if (inside) fail(open, "a fenced block that is never closed")
      if (marked) fail(marked, "a ci: skip mark at the end of the file")
      exit bad
    }' "$1"
}

errors=0
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "readme_commands: no such file: $f" >&2; exit 2; }
  shown="$(realpath "$f")"
  shown="${shown#"$repo"/}"
  [[ "$shown" == /* ]] && shown="$f"
  extract "$f" "$shown" || errors=$((errors + 1))
done
[ "$errors" -eq 0 ] || {
  echo "readme_commands: the rule above is broken (see the top of tests/setup/readme_commands.sh)"
  exit 1
}

blocks=()
for where in "$work"/blocks/*.where; do [ -e "$where" ] && blocks+=("${where%.where}"); done
[ "${#blocks[@]}" -gt 0 ] || { echo "readme_commands: no \`\`\`sh block found in ${files[*]}"; exit 1; }

if [ "$dry_run" -eq 0 ]; then
  [ -x "$bin_dir/xfbench" ] || {
    echo "readme_commands: $bin_dir/xfbench is not built (cmake --preset release &&" \
      "cmake --build --preset release), or set XFBENCH_BIN_DIR" >&2
    exit 1
  }
  # The scratch copy of the tree, build folders linked whole.
  scratch="$work/tree"
  mkdir "$scratch"
  for entry in "$repo"/* "$repo"/.ci; do
    [ -e "$entry" ] || continue
    case "$(basename "$entry")" in
      build*) ln -s "$entry" "$scratch/" ;;
      *) cp -r "$entry" "$scratch/" ;;
    esac
  done
fi

ran=0 skipped=0 failed=0
for b in "${blocks[@]}"; do
  where="$(cat "$b.where")"
  if [ -f "$b.skip" ]; then
    skipped=$((skipped + 1))
    echo "SKIP $where ($(cat "$b.skip")): $(grep -m1 -v '^[[:space:]]*\(#.*\)\?$' "$b.sh" || true)"
    continue
  fi
  if [ "$dry_run" -eq 1 ]; then
    ran=$((ran + 1))
    echo "RUN  $where:"
    sed 's/^/       /' "$b.sh"
    continue
  fi
  start=$SECONDS rc=0
  (cd "$scratch" && PATH="$bin_dir:$PATH" timeout "$block_timeout" bash -e -o pipefail "$b.sh") \
    </dev/null >"$b.log" 2>&1 || rc=$?
  if [ "$rc" -eq 0 ]; then
    ran=$((ran + 1))
    echo "ok   $where ($((SECONDS - start)) s): $(grep -m1 -v '^[[:space:]]*\(#.*\)\?$' "$b.sh")"
  else
    failed=$((failed + 1))
    why="exit $rc"
    [ "$rc" -eq 124 ] && why="still running after ${block_timeout} s"
    echo "FAIL $where ($why, $((SECONDS - start)) s). The block:"
    sed 's/^/       /' "$b.sh"
    echo "     its last output lines:"
    tail -n 15 "$b.log" | sed 's/^/       /'
  fi
done

if [ "$dry_run" -eq 1 ]; then
  echo "readme_commands (dry run): $ran block(s) would run, $skipped skipped as marked"
  exit 0
fi
echo "readme_commands: $ran block(s) ran and passed, $skipped skipped as marked, $failed failed"
if [ "$failed" -gt 0 ]; then
  echo "A block a user copies must work as written. One that needs a GPU, a long time or the" \
    "user's own files gets, on the line just before its fence: <!-- ci: skip (REASON) -->"
  exit 1
fi
