"""A scripted model on loopback (``--acp-model``): real agents that call a model over HTTP (Anthropic Messages,
OpenAI Responses / Chat Completions, Gemini) run whole turns without credentials or network.

| module | responsibility |
|---|---|
| ``scripts.py`` | the scripts (plain, long, tool, permission, terminal, plan, error), chosen by the prompt's words |
| ``anthropic.py`` | the Messages API: a script step as a message or as SSE events |
| ``openai.py`` | the Responses and Chat Completions APIs: the same |
| ``gemini.py`` | the Gemini API (generateContent, streamGenerateContent): the same |
| ``server.py`` | ``ModelServer`` (127.0.0.1, a free port, a JSONL log of every request) and ``agent_env`` |
"""

from .server import DUMMY_KEY, LOOPBACK, ModelServer, agent_env, serve_for_run

__all__ = ["DUMMY_KEY", "LOOPBACK", "ModelServer", "agent_env", "serve_for_run"]
