"""The guarded way in to client-side fuzzing (``acp_conformance.fuzz.client_fuzz``).

The console script and the pytest plugin reach client fuzzing only through this module, which
imports ``client_fuzz`` when it is first asked for and uses only its ``fuzz_client``,
``replay_client`` and ``client_config`` (the config built from the client's command line). An
installation without it says so in one sentence (``ClientFuzzUnavailable``), never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


class ClientFuzzUnavailable(Exception):
    """Client-side fuzzing is not available, or its config cannot be built; the message says why."""


@dataclass
class ClientFuzzer:
    fuzz: Callable[..., Any]  # fuzz_client(config, *, seed, max_examples, budget, step_count, report_dir)
    replay: Callable[..., Any]  # replay_client(path, config)
    config: Any


def client_fuzzer(argv: list[str] | str, **settings: Any) -> ClientFuzzer:
    """The client fuzzer with its config for ``argv`` (``settings``: timeout, strict, env, ...)."""
    try:
        from . import client_fuzz
    except ImportError as e:
        if getattr(e, "name", None) == f"{__package__}.client_fuzz":
            raise ClientFuzzUnavailable("client-side fuzzing is not available in this installation") from None
        raise ClientFuzzUnavailable(f"client-side fuzzing cannot be loaded ({e})") from None
    fuzz = getattr(client_fuzz, "fuzz_client", None)
    replay = getattr(client_fuzz, "replay_client", None)
    make_config = getattr(client_fuzz, "client_config", None)
    if fuzz is None or replay is None or make_config is None:
        raise ClientFuzzUnavailable("client-side fuzzing is not available in this installation")
    try:
        config = make_config(argv, **settings)
    except (ValueError, TypeError) as e:
        raise ClientFuzzUnavailable(str(e)) from None
    return ClientFuzzer(fuzz, replay, config)
