"""xfbench reports: compare runs, seed-style tables and plots, HTML report (see README.md).

Run as `python3 -m reports <compare|table|plot|html> ...` from the repository root. The PyTorch
peer runner, reports/peer_torch.py, is a standalone script (stdlib + torch only) over the package
reports/peer/, which it loads by path.
"""
