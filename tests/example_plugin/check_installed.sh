#!/usr/bin/env bash
# Installs the build folder $1 into a fresh prefix, builds this example against it as a separate
# project, and runs it through the installed host. Run by CTest (example_plugin_out_of_tree).
set -euo pipefail
build="$1"; here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/example" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CUDA_ARCHITECTURES="${XF_EXAMPLE_CUDA_ARCH:-90}" >/dev/null
cmake --build "$work/example" >/dev/null

host="$work/prefix/bin/xfbench"
# Installed plugins are found without flags.
"$host" --xfbench_list_plugins | grep -q '^vector ' || { echo "installed vector plugin not found"; exit 1; }
# The example through XFBENCH_PLUGIN_PATH; without a GPU its GPU case is skipped (exit 4).
set +e
XFBENCH_PLUGIN_PATH="$work/example" "$host" --benchmark_filter=Example --xfbench_iterations=3 \
  >"$work/out.txt" 2>"$work/err.txt"
rc=$?
set -e
cat "$work/out.txt" "$work/err.txt"
grep -q 'Example/axpy/cpu/n:4194304 ' "$work/out.txt" || { echo "CPU twin did not run"; exit 1; }
if [ $rc -eq 4 ]; then
  grep -q 'no usable GPU' "$work/out.txt" || { echo "GPU case not skipped with the reason"; exit 1; }
elif [ $rc -ne 0 ]; then
  echo "xfbench exited $rc"; exit 1
fi
grep -q 'TFLOPS=' "$work/out.txt" || { echo "no counters"; exit 1; }
# The same plugin through --xfbench_plugin_dir.
"$host" --xfbench_plugin_dir="$work/example" --xfbench_list_plugins | grep -q '^example ' || exit 1
echo "example plugin: OK (exit $rc)"
