# Second call of session 24 (see ../README.cmd): the peer under faulthandler.dump_traceback_later
# (crashed at 60 s: stacks.txt, peer_fp8.txt rc=139), then xfbench bf16 and fp8 delayed gpt2-xl
# s1024 b8 with --xfbench_validate=false, 3 repetitions (xfbench.txt, xfbench.json; the command is
# in ../README.cmd). Carried: build/device/bin/xfbench, build/device/lib, .whl.
