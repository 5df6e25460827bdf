"""``python -m hotset ...``: the command line without an installed ``hotset`` script
(a checkout run with ``PYTHONPATH=src``, as ``benchmarks/gpu/pipeline.sh`` does)."""

from __future__ import annotations

from hotset.cli import main

if __name__ == "__main__":
    main()
