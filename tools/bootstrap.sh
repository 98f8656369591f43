#!/usr/bin/env bash
# Idempotent local set-up shared by tools/test and tools/demo. Installs
# nothing system-wide; everything lands under .tools/ and
# tests-integration/node_modules/ (both gitignored).
#
#   1. .tools/hatch-venv: hatch pinned by tools/requirements-hatch.txt and
#      tools/hatch-constraints.txt. Re-made only when those files, the
#      repository's path, or the Python interpreter (its version and resolved
#      path) change (a hash stamp inside the venv), or when the venv's python
#      no longer runs.
#   2. tests-integration/node_modules from package-lock.json with `npm ci`,
#      only when the lockfile's hash differs from the stamp written after the
#      last successful install. Set SAMGITA_SKIP_NPM=1 to skip this step.
#
# Source it (`source tools/bootstrap.sh`) to get HATCH (the pinned hatch) and
# the exported HATCH_DATA_DIR / HATCH_CACHE_DIR / UV_CACHE_DIR /
# PIP_CACHE_DIR / npm_config_cache / VIRTUALENV_OVERRIDE_APP_DATA that keep
# environments and caches inside the repository (.tools/); or run it
# directly (`bash tools/bootstrap.sh`) just to install.

_samgita_bootstrap() {
  set -euo pipefail
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  local tools="$root/.tools"
  mkdir -p "$tools"
  # Caches inside the repository (all gitignored under .tools/): pip's
  # (bootstrap, hatch's pip, verify_standalone's fresh venvs), npm's
  # (npm ci) and virtualenv's app data (seed wheels, interpreter info).
  export PIP_CACHE_DIR="$tools/pip-cache"
  export npm_config_cache="$tools/npm-cache"
  export VIRTUALENV_OVERRIDE_APP_DATA="$tools/virtualenv-app-data"

  # -- Python 3.11+ --------------------------------------------------------
  local py="" cand
  for cand in ${SAMGITA_PYTHON:-} python3.13 python3.12 python3.11 python3 python; do
    if command -v "$cand" >/dev/null 2>&1 &&
      "$cand" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null; then
      py=$(command -v "$cand")
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "bootstrap: Python 3.11 or newer is required (none of python3.13..python3 found)" >&2
    return 1
  fi

  # -- pinned hatch in .tools/hatch-venv -----------------------------------
  local venv="$tools/hatch-venv" want have=""
  # The stamp covers the pins, the repository's path (a venv's scripts name
  # their interpreter by absolute path: a moved checkout needs a new venv)
  # and the interpreter (version and resolved path).
  want=$(cat "$root/tools/requirements-hatch.txt" "$root/tools/hatch-constraints.txt" |
    "$py" -c 'import hashlib, os, sys
h = hashlib.sha256(sys.stdin.buffer.read())
for part in (sys.version, sys.argv[1], os.path.realpath(sys.executable)):
    h.update(b"\0" + part.encode())
print(h.hexdigest())' "$root")
  [ -f "$venv/.samgita-stamp" ] && have=$(cat "$venv/.samgita-stamp")
  if [ "$want" != "$have" ] || [ ! -x "$venv/bin/hatch" ] ||
    ! "$venv/bin/python" -c '' 2>/dev/null; then
    echo "bootstrap: installing the pinned hatch into .tools/hatch-venv ($("$py" -V))" >&2
    rm -rf "$venv"
    if ! "$py" -m venv "$venv" 2>/dev/null; then
      # A Python without ensurepip (Debian without python3-venv): make the
      # venv with virtualenv, installed by pip into .tools/ only.
      rm -rf "$venv" "$tools/virtualenv-pkg"
      "$py" -m pip install --quiet --disable-pip-version-check --target "$tools/virtualenv-pkg" \
        -c "$root/tools/hatch-constraints.txt" virtualenv
      PYTHONPATH="$tools/virtualenv-pkg" "$py" -m virtualenv --quiet "$venv"
    fi
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
      -r "$root/tools/requirements-hatch.txt"
    echo "$want" >"$venv/.samgita-stamp"
  fi
  HATCH="$venv/bin/hatch"
  export HATCH
  export HATCH_DATA_DIR="$tools/hatch/data"
  export HATCH_CACHE_DIR="$tools/hatch/cache"
  # uv (hatch's installer here) keeps its cache beside hatch's.
  export UV_CACHE_DIR="$tools/hatch/uv-cache"
  # Never prompt, never colour-escape CI logs.
  export HATCH_INTERACTIVE=false

  # -- pinned npm peers ----------------------------------------------------
  if [ "${SAMGITA_SKIP_NPM:-0}" != 1 ]; then
    local peers="$root/tests-integration" lockhash stamp="$root/tests-integration/node_modules/.samgita-lock-sha256"
    if ! command -v npm >/dev/null 2>&1; then
      echo "bootstrap: npm is required for the pinned test peers in tests-integration/" >&2
      return 1
    fi
    lockhash=$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$peers/package-lock.json")
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lockhash" ]; then
      echo "bootstrap: npm ci in tests-integration/ (pinned peers; large the first time)" >&2
      (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error >&2)
      echo "$lockhash" >"$stamp"
    fi
  fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  _samgita_bootstrap
  echo "bootstrap: hatch $("$HATCH" --version | awk '{print $NF}') at $HATCH; data in $HATCH_DATA_DIR"
else
  # Sourced: keep the caller's shell options as they were.
  _samgita_saved_opts=$(set +o)
  _samgita_bootstrap
  _samgita_rc=$?
  eval "$_samgita_saved_opts"
  unset _samgita_saved_opts
  # shellcheck disable=SC2248
  return $_samgita_rc
fi
