"""``python -m acp_conformance.reference.agent``: run the reference agent on stdin/stdout."""

import sys

from . import main

sys.exit(main())
