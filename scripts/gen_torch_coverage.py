#!/usr/bin/env python3
"""Rewrites docs/torch.md's coverage table (between the torch-coverage
markers) from python/kcheck/torch/ops.py; test_torch.py checks the two
are equal."""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
from kcheck.torch import ops  # noqa: E402

path = os.path.join(ROOT, "docs", "torch.md")
with open(path) as f:
    text = f.read()
begin, end = "<!-- torch-coverage-begin -->\n", "\n<!-- torch-coverage-end -->"
i, j = text.index(begin) + len(begin), text.index(end)
with open(path, "w") as f:
    f.write(text[:i] + ops.markdown() + text[j:])
