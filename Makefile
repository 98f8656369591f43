# Top-level commands. `make test` is what CI runs (via .ci/run) on a clean clone.
APPS := apps/samgita_protocol apps/samgita_protocol_websocket apps/samgita_protocol_codex

.PHONY: setup test dialyzer

setup:
	bash scripts/setup.sh

# OTP's dialyzer over the core package (PLT built once into its _build).
dialyzer: setup
	bash scripts/dialyzer.sh

# Setup, then for every package: compile with warnings as errors, format
# check, and all tests including interop tests against the pinned peers.
test: setup
	@set -e; for app in $(APPS); do \
	  echo "== $$app"; \
	  (cd $$app && mix compile --warnings-as-errors && mix format --check-formatted && mix test --include interop); \
	done
	@if [ -f apps/samgita_protocol/scripts/verify_standalone.py ]; then python3 apps/samgita_protocol/scripts/verify_standalone.py; fi
	bash scripts/dialyzer.sh
