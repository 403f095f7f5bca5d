"""The reference agent, broken on its very first launch only: PROMPT-001's result lacks messageId.

The first launch creates the marker file named by ACP_FLAKY_MARK; every later launch is correct.
So the first test to prompt fails, and passes when rerun (a new launch): a flaky test.
"""

from __future__ import annotations

import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from acp_conformance.reference.agent import ReferenceAgent, main  # noqa: E402


class FirstLaunchBroken(ReferenceAgent):
    def prompt_result(self, message_id):
        return {}


if __name__ == "__main__":
    mark = os.environ["ACP_FLAKY_MARK"]
    try:
        fd = os.open(mark, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        os.close(fd)
        first = True
    except FileExistsError:
        first = False
    sys.exit(main(FirstLaunchBroken if first else ReferenceAgent))
