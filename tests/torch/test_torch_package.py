"""``import hotset`` stays light; the loader API is re-exported lazily at top level."""

from __future__ import annotations

import subprocess
import sys


def test_lazy_reexports() -> None:
    code = (
        "import sys, hotset\n"
        "assert 'torch' not in sys.modules, 'import hotset pulled in torch'\n"
        "from hotset import loader, open_dataset\n"
        "import hotset.torch as ht\n"
        "assert loader is ht.loader and open_dataset is ht.open_dataset\n"
        "assert 'torch' in sys.modules\n"
        "try:\n"
        "    hotset.nothing_here\n"
        "except AttributeError as exc:\n"
        "    assert 'nothing_here' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
