"""Each request method's retry class (RFD "v2 Idempotency Keys") is data the catalog layer loads."""

from __future__ import annotations

from acp_conformance.cli import main
from acp_conformance.protocol.retry import AS_IS, NEVER, WITH_KEY, load_retry_classes, retry_class
from acp_conformance.protocol.schema import load_schema


def test_every_request_method_of_the_schema_has_one_retry_class():
    source, meanings, methods = load_retry_classes()
    assert "agentclientprotocol.com/rfds/v2/idempotency-keys" in source
    assert set(meanings) == {AS_IS, WITH_KEY, NEVER}
    requests = {m.name for m in load_schema().methods.values() if m.kind == "request"}
    assert requests == set(methods), requests ^ set(methods)
    for rc in methods.values():
        assert rc.kind in meanings and rc.basis in ("rfd", "reading") and rc.why


def test_session_prompt_is_resent_only_with_its_key():
    rc = retry_class("session/prompt")
    assert rc is not None and rc.kind == WITH_KEY and rc.basis == "rfd"
    assert retry_class("session/cancel") is None  # a notification: no response to lose


def test_rules_command_shows_the_table(capsys):
    assert main(["rules", "--retry-classes"]) == 0
    out = capsys.readouterr().out
    assert "session/prompt" in out and "with_key" in out and "idempotency-keys" in out
