#!/bin/bash
# The default suite's cases of one family, 5 repetitions each (issue #15's CV table):
#   cv_run.sh <Family> <out.json> [extra xfbench flags]
# The exact default-suite names come from the listing without a filter (a filter alone would
# select the family's whole sweep). Validation is off: the default suite validated these cases;
# the timing protocol is the default (steady).
set -euo pipefail
family=$1 out=$2
shift 2
bin=${XF_BIN:-build/device/bin}
names=$("$bin"/xfbench --benchmark_list_tests 2>/dev/null | grep "^$family/" | paste -sd '|')
"$bin"/xfbench --benchmark_filter="^($names)\$" --benchmark_repetitions=5 \
  --xfbench_validate=false --benchmark_out="$out" --benchmark_out_format=json "$@"
