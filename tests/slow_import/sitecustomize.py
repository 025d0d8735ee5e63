"""Makes ``import torch`` slow in a collector started with this folder on PYTHONPATH, so a test
can signal it while torch imports, as on a loaded host (13-27 s there).

A finder ahead of the others waits on the first import of torch, after writing the path in
SLOW_IMPORT_MARK so the test knows the import has begun; the real torch is imported after.
"""

import os
import sys
import time


class _SlowTorch:
    def find_spec(self, name, path=None, target=None):  # noqa: ANN001, ANN201
        if name == "torch":
            sys.meta_path.remove(self)
            with open(os.environ["SLOW_IMPORT_MARK"], "w", encoding="utf-8") as handle:
                handle.write("importing torch\n")
            time.sleep(float(os.environ.get("SLOW_IMPORT_SECONDS", "30")))
        return None  # the ordinary finders find the real module


if os.environ.get("SLOW_IMPORT_MARK"):
    sys.meta_path.insert(0, _SlowTorch())
