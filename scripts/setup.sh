#!/usr/bin/env bash
# Idempotent set-up for SamgitaProtocol development and CI.
#
# 1. Elixir >= 1.18 on OTP 27 and OTP's dialyzer: installed from Debian
#    trixie (pinned at low priority so nothing else moves) only when `elixir`
#    is missing or older, or `dialyzer` is missing.
# 2. Pinned npm test peers from test/peers/package-lock.json (`npm ci`),
#    only when the installed tree does not match the lockfile.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

elixir_ok() {
  command -v elixir >/dev/null 2>&1 || return 1
  local v
  v=$(elixir -e 'IO.write(System.version())' 2>/dev/null) || return 1
  elixir -e "System.halt(if Version.match?(\"$v\", \">= 1.18.0\"), do: 0, else: 1)" >/dev/null 2>&1
}

mirror_uri() {
  # Reuse the mirror of the machine's existing Debian source; never hard-code a host.
  local uri=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -f /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list)
  fi
  [ -n "$uri" ] || { echo "setup: cannot find the Debian mirror URI" >&2; exit 1; }
  printf '%s\n' "$uri"
}

install_elixir() {
  if [ "$(id -u)" != 0 ]; then
    echo "setup: Elixir >= 1.18 is missing and installing it needs root" >&2
    exit 1
  fi
  local uri
  uri=$(mirror_uri)
  echo "setup: installing Elixir from Debian trixie (mirror $uri)"
  cat >/etc/apt/sources.list.d/trixie.sources <<SRC
Types: deb
URIs: $uri
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  cat >/etc/apt/preferences.d/trixie-pin <<PIN
Package: *
Pin: release n=trixie
Pin-Priority: 100
PIN
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t trixie elixir erlang-dev erlang-dialyzer >/dev/null
}

# dialyzer comes from the same trixie packages (erlang-dialyzer); a machine
# that has Elixir but not dialyzer gets the same install.
if elixir_ok && command -v dialyzer >/dev/null 2>&1; then
  echo "setup: $(elixir --version | tail -n 1) and dialyzer present"
else
  install_elixir
  elixir_ok || { echo "setup: Elixir >= 1.18 still missing after install" >&2; exit 1; }
  command -v dialyzer >/dev/null 2>&1 || { echo "setup: dialyzer still missing after install" >&2; exit 1; }
  echo "setup: $(elixir --version | tail -n 1) and dialyzer installed"
fi

# Test peers (ajv, ws, ...) pinned by the lockfile. `npm ci` is skipped when the
# installed tree already matches the lockfile byte for byte.
peers="$root/test/peers"
if [ -f "$peers/package-lock.json" ]; then
  command -v npm >/dev/null 2>&1 || { echo "setup: npm is required for the interop test peers" >&2; exit 1; }
  if ! cmp -s "$peers/package-lock.json" "$peers/node_modules/.package-lock.json.installed" 2>/dev/null; then
    (cd "$peers" && npm ci --no-audit --no-fund --loglevel=error)
    cp "$peers/package-lock.json" "$peers/node_modules/.package-lock.json.installed"
  fi
  echo "setup: npm test peers match the lockfile"
fi
