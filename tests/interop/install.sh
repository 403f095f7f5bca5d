#!/usr/bin/env bash
# Install the interop targets' SDKs from the public registries (idempotent):
#   * npm  @agentclientprotocol/sdk@2.4.0 (pinned by ts/package-lock.json) -> tests/interop/ts/node_modules
#   * PyPI agent-client-protocol==1.0.0rc3                                   -> tests/interop/.venv
#   * npm  @agentclientprotocol/claude-agent-acp@0.101.0, codex-acp@2.6.0    -> tests/interop/adapters/node_modules
#   * the released v1-only agents (ACP_INTEROP_V1=1 only: about 1 GB): npm @google/gemini-cli@0.61.0,
#     @qwen-code/qwen-code@0.24.4, @zed-industries/claude-code-acp@0.16.2, opencode-ai@1.18.33
#     (pinned by v1/package-lock.json) -> tests/interop/v1/node_modules; PyPI fast-agent-mcp==0.10.48
#     (Python >= 3.12: PYTHON_V1, else python3.13 or python3.12 on PATH) -> tests/interop/.venv-v1
# Exits non-zero with a message naming what failed (no node/npm, no python, a registry unreachable).
# Used by tests/test_interop.py (which skips when this fails) and by .ci/run.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
TS_VERSION="2.4.0"
PY_SPEC="agent-client-protocol==1.0.0rc3"
PYTHON="${PYTHON:-python3}"
status=0

fail() { echo "interop install: $*" >&2; status=1; }

# -- TypeScript SDK --------------------------------------------------------------------------
ts_installed() {
    node -e 'const p=require(process.argv[1]); process.exit(p.version===process.argv[2]?0:1)' \
        "$here/ts/node_modules/@agentclientprotocol/sdk/package.json" "$TS_VERSION" 2>/dev/null
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    fail "node/npm not found on PATH; the TypeScript target needs Node >= 20"
elif ts_installed; then
    echo "interop install: @agentclientprotocol/sdk@$TS_VERSION already installed"
elif (cd "$here/ts" && timeout 240 npm ci --no-audit --no-fund --loglevel=error); then
    echo "interop install: installed @agentclientprotocol/sdk@$TS_VERSION"
else
    fail "npm ci failed in tests/interop/ts (is the npm registry reachable? npm config get registry: $(npm config get registry 2>/dev/null))"
fi

# -- the released v2 adapters (claude-agent-acp, codex-acp) ----------------------------------------
adapters_installed() {
    node -e 'for (const [n, v] of [["claude-agent-acp", "0.101.0"], ["codex-acp", "2.6.0"]]) {
               const p = require(process.argv[1] + "/" + n + "/package.json"); if (p.version !== v) process.exit(1) }' \
        "$here/adapters/node_modules/@agentclientprotocol" 2>/dev/null
}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    fail "node/npm not found on PATH; the adapters need Node >= 20"
elif adapters_installed; then
    echo "interop install: claude-agent-acp@0.101.0 and codex-acp@2.6.0 already installed"
elif (cd "$here/adapters" && timeout 600 npm ci --no-audit --no-fund --loglevel=error); then
    echo "interop install: installed claude-agent-acp@0.101.0 and codex-acp@2.6.0"
else
    fail "npm ci failed in tests/interop/adapters (is the npm registry reachable?)"
fi

# -- Python SDK --------------------------------------------------------------------------------
venv="$here/.venv"
py_installed() {
    "$venv/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("agent-client-protocol") != "1.0.0rc3")' 2>/dev/null \
        && "$venv/bin/python" -c 'import acp.experimental.v2' 2>/dev/null
}
if py_installed; then
    echo "interop install: $PY_SPEC already installed in tests/interop/.venv"
elif ! command -v "$PYTHON" >/dev/null; then
    fail "$PYTHON not found; set PYTHON=/path/to/python3.10+"
elif ! { [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"; }; then
    fail "cannot create the venv tests/interop/.venv with $PYTHON"
elif timeout 240 "$venv/bin/python" -m pip install -q --disable-pip-version-check "$PY_SPEC" && py_installed; then
    echo "interop install: installed $PY_SPEC into tests/interop/.venv"
else
    fail "pip install $PY_SPEC failed (is PyPI reachable? pip config: $("$venv/bin/python" -m pip config list 2>/dev/null | tr '\n' ' '))"
fi

# -- the released v1-only agents (opt-in: ACP_INTEROP_V1=1) -----------------------------------------
V1_NPM='[["@google/gemini-cli","0.61.0"],["@qwen-code/qwen-code","0.24.4"],["@zed-industries/claude-code-acp","0.16.2"],["opencode-ai","1.18.33"]]'
FAST_AGENT_SPEC="fast-agent-mcp==0.10.48"
v1_npm_installed() {
    node -e 'for (const [n, v] of JSON.parse(process.argv[2])) {
               const p = require(process.argv[1] + "/" + n + "/package.json"); if (p.version !== v) process.exit(1) }' \
        "$here/v1/node_modules" "$V1_NPM" 2>/dev/null
}
venv_v1="$here/.venv-v1"
fast_agent_installed() {
    "$venv_v1/bin/python" -c 'import importlib.metadata as m, sys; sys.exit(m.version("fast-agent-mcp") != "0.10.48")' 2>/dev/null
}
python_v1() {  # a Python >= 3.12 for fast-agent
    for py in "${PYTHON_V1:-}" python3.13 python3.12; do
        [ -n "$py" ] && "$py" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null && { echo "$py"; return 0; }
    done
    return 1
}
if [ "${ACP_INTEROP_V1:-}" = "1" ]; then
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        fail "node/npm not found on PATH; the v1 agents need Node >= 20"
    elif v1_npm_installed; then
        echo "interop install: the v1 agents (gemini-cli, qwen-code, claude-code-acp, opencode) already installed"
    # npm install, not npm ci: npm 11's ci refuses this lock for the platform packages that gemini-cli and
    # opencode list as optional with no version; the exact versions in package.json and the lock still decide
    elif (cd "$here/v1" && timeout 900 npm install --no-audit --no-fund --loglevel=error); then
        echo "interop install: installed the v1 agents (gemini-cli, qwen-code, claude-code-acp, opencode)"
    else
        fail "npm install failed in tests/interop/v1 (is the npm registry reachable?)"
    fi
    if fast_agent_installed; then
        echo "interop install: $FAST_AGENT_SPEC already installed in tests/interop/.venv-v1"
    elif ! py="$(python_v1)"; then
        fail "fast-agent needs Python >= 3.12: set PYTHON_V1=/path/to/python3.12+"
    elif { [ -x "$venv_v1/bin/python" ] || "$py" -m venv "$venv_v1"; } \
            && timeout 600 "$venv_v1/bin/python" -m pip install -q --disable-pip-version-check "$FAST_AGENT_SPEC" \
            && fast_agent_installed; then
        echo "interop install: installed $FAST_AGENT_SPEC into tests/interop/.venv-v1"
    else
        fail "pip install $FAST_AGENT_SPEC failed in tests/interop/.venv-v1"
    fi
fi

exit $status
