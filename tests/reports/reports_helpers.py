"""Shared helpers for the reports tests: fixture paths and running the CLI like a user.

Imported first by every test module (a plain module, not conftest.py, so that no other
conftest.py in the tree can shadow it)."""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIX = os.path.join(ROOT, "tests", "reports", "fixtures")

if ROOT not in sys.path:  # `import reports` from any working directory
    sys.path.insert(0, ROOT)


def fixture(name):
    return os.path.join(FIX, name)


def run_cli(*args, cwd=ROOT):
    """python3 -m reports ... as a subprocess; returns CompletedProcess with text output."""
    env = dict(os.environ, PYTHONPATH=ROOT, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
