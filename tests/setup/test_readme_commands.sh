#!/usr/bin/env bash
# Tests tests/setup/readme_commands.sh on small Markdown files, with a stub xfbench that lists
# cases and exits 4 when asked to run one (as xfbench does without a GPU): which blocks run, which
# are skipped, which break the rule, and that what a block writes stays out of the tree.
#   tests/setup/test_readme_commands.sh
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
script="$repo/tests/setup/readme_commands.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
cat >"$work/bin/xfbench" <<'EOF'
#!/usr/bin/env bash
case " $* " in
  *" --benchmark_list_tests "* | *" --help "* | *" --version "*) echo "Stub/case"; exit 0 ;;
esac
echo "xfbench: 1 selected case needs a GPU, but no NVIDIA driver found" >&2
exit 4
EOF
chmod +x "$work/bin/xfbench"
export XFBENCH_BIN_DIR="$work/bin"
failed=0 cases=0

# check NAME WANT_RC PATTERN [ARGS...]: runs the script with ARGS; its exit code must be WANT_RC
# and its output must match the extended regex PATTERN.
check() {
  local name="$1" want="$2" pattern="$3" rc=0
  shift 3
  cases=$((cases + 1))
  "$script" "$@" >"$work/out" 2>&1 || rc=$?
  if [ "$rc" -ne "$want" ] || ! grep -qE -- "$pattern" "$work/out"; then
    echo "FAIL: $name: exit $rc (want $want), output does not match /$pattern/ or differs:"
    sed 's/^/    /' "$work/out"
    failed=$((failed + 1))
  else
    echo "ok: $name"
  fi
}
md() { cat >"$work/$1"; }  # md FILE: writes stdin to $work/FILE
cd "$work"  # the files by their plain names, as the output names them

marker="$repo/reports/out/readme_commands_selftest_$$"
md good.md <<EOF
# Good

\`\`\`sh
xfbench --benchmark_list_tests    # a bare xfbench is the build's
echo ran >ran.txt && test -s ran.txt
mkdir -p reports/out && touch reports/out/readme_commands_selftest_$$
\`\`\`

<!-- ci: skip (needs a GPU) -->
\`\`\`sh
xfbench --benchmark_filter=Stub
\`\`\`

\`\`\`text
python3 -m reports compare base.json new.json [options]
\`\`\`

\`\`\`cpp
int main() { return 1; }
\`\`\`

- In a list item:

  ~~~bash
  xfbench --version
  ~~~
EOF
check "runs sh blocks, skips marked ones, ignores text and cpp" 0 \
  "2 block\(s\) ran and passed, 1 skipped as marked, 0 failed" good.md
grep -q "^SKIP good.md:10 (needs a GPU): xfbench --benchmark_filter=Stub$" "$work/out" ||
  { echo "FAIL: the skip line names file, line, reason and command"; failed=$((failed + 1)); }
[ ! -e "$marker" ] ||
  { echo "FAIL: a block wrote into the tree: $marker"; rm -f "$marker"; failed=$((failed + 1)); }

check "dry run lists, runs nothing" 0 "2 block\(s\) would run, 1 skipped as marked" \
  --dry-run good.md
grep -q "^       echo ran >ran.txt && test -s ran.txt$" "$work/out" ||
  { echo "FAIL: the dry run prints each command"; failed=$((failed + 1)); }

md gpu.md <<'EOF'
```sh
xfbench --benchmark_list_tests
xfbench --benchmark_filter=Stub
```
EOF
check "an unmarked block that needs a GPU fails (exit 4)" 1 "FAIL gpu.md:1 \(exit 4, " gpu.md
grep -q "^       xfbench: 1 selected case needs a GPU, but" "$work/out" ||
  { echo "FAIL: a failed block's last output lines are shown"; failed=$((failed + 1)); }

md untagged.md <<'EOF'
```
xfbench --benchmark_list_tests
```
EOF
check "a fence without a language fails" 1 "untagged.md:1: a fenced block without a language" \
  --dry-run untagged.md

md noreason.md <<'EOF'
<!-- ci: skip -->
```sh
false
```
EOF
check "a mark without a reason fails" 1 "noreason.md:1: a ci: mark must read exactly" \
  --dry-run noreason.md

md apart.md <<'EOF'
<!-- ci: skip (needs a GPU) -->

```sh
false
```
EOF
check "a mark not just before its fence fails" 1 "apart.md:1: a ci: skip mark must be on the line just before" \
  --dry-run apart.md

md marked_text.md <<'EOF'
<!-- ci: skip (needs a GPU) -->
```text
false
```
EOF
check "a mark before a text block fails" 1 "marked_text.md:1: a ci: skip mark before a block that is not" \
  --dry-run marked_text.md

md open.md <<'EOF'
```sh
true
EOF
check "an unclosed fence fails" 1 "open.md:1: a fenced block that is never closed" \
  --dry-run open.md

md slow.md <<'EOF'
```sh
sleep 30
```
EOF
README_BLOCK_TIMEOUT=1 check "a block past the time limit fails" 1 \
  "FAIL slow.md:1 \(still running after 1 s" slow.md

md errexit.md <<'EOF'
```sh
false
echo not reached
```
EOF
check "a failing line fails the block (errexit)" 1 "FAIL errexit.md:1 \(exit 1" errexit.md

echo "$((cases - failed)) of $cases cases passed"
[ "$failed" -eq 0 ]
