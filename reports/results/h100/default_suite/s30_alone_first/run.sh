#!/usr/bin/env bash
# Session 30 (issue 32), the call after ../s30_alone_rest/: the same script, branch s30-try's build
# (with power-limit-capped: a case at >= 97% of the enforced power limit counts as capped), the
# cases from the first on alone (s29_plans ran them on main's build; the fp32 Matmul was 2.3% off).
# Run: X=build/s30new/bin/xfbench bash reports/results/h100/default_suite/s30_alone_first/run.sh
ALONE_FROM=1 ALONE_UNTIL=${ALONE_UNTIL:-470} exec bash "$(dirname "$0")/../s30_alone_rest/run.sh"
