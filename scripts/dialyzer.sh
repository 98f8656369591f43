#!/usr/bin/env bash
# OTP's dialyzer over the compiled core package (no dialyxir: no hex).
# The PLT (erts, kernel, stdlib, elixir) is built once per machine into the
# package's _build and reused; building it takes about a minute.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
app="$root/apps/samgita_protocol"
env="${MIX_ENV:-dev}"
elixir_ebin=$(elixir -e 'IO.write(:code.lib_dir(:elixir))')/ebin
plt="$app/_build/core.plt"

(cd "$app" && MIX_ENV="$env" mix compile --warnings-as-errors >/dev/null)

if [ ! -f "$plt" ]; then
  echo "dialyzer: building the PLT (about a minute)"
  # Elixir's own beams need the elixir app on the code path to be read.
  dialyzer -pa "$elixir_ebin" --build_plt --output_plt "$plt" \
    --apps erts kernel stdlib "$elixir_ebin" >/dev/null 2>&1 || [ -f "$plt" ]
fi

dialyzer -pa "$elixir_ebin" --plt "$plt" "$app/_build/$env/lib/samgita_protocol/ebin"
