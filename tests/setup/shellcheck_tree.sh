#!/usr/bin/env bash
# Runs shellcheck over every shell script of the tree: *.sh files and files whose first line is a
# bash or sh shebang (the tracked files in a git checkout, else all files outside build folders),
# following what a script sources.
# Exit 77 (CTest's skip) when shellcheck is not installed; CI installs it and requires 0.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v shellcheck >/dev/null ||
  { echo "shellcheck is not installed (Debian: apt-get install shellcheck)"; exit 77; }
scripts=()
while IFS= read -r -d '' f; do
  first=""
  IFS= read -r first <"$f" || true
  if [[ "$f" == *.sh || "$first" =~ ^#!.*[/\ ](ba)?sh(\ |$) ]]; then scripts+=("$f"); fi
done < <(git ls-files -z 2>/dev/null ||
  find . -path ./.git -prune -o -path './build*' -prune -o -type f -print0)
[ "${#scripts[@]}" -gt 0 ] || { echo "no shell scripts found under $PWD"; exit 1; }
shellcheck -x "${scripts[@]}"
echo "shellcheck: ${#scripts[@]} scripts clean: ${scripts[*]}"
