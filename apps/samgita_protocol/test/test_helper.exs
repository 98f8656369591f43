# Interop tests need independent peers (Node ajv, ...) installed by
# scripts/setup.sh; `make test` runs them with `--include interop`.
ExUnit.start(exclude: [:interop])
