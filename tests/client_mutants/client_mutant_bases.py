"""What several client mutants share: not mutants themselves."""

from __future__ import annotations

import os
import sys


def crash(why: str) -> None:
    print(f"mutant client: crashing on {why}", file=sys.stderr, flush=True)
    os._exit(70)
