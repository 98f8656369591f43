#!/usr/bin/env python3
"""Verify that samgita_protocol builds and tests outside this repository.

Copies apps/samgita_protocol (without build outputs) and its
examples/consumer project into a fresh temporary directory, keeping the
relative layout so the consumer's `{:samgita_protocol, path: "../.."}`
dependency resolves to the copy, then runs:

  library:  mix compile --warnings-as-errors
            mix test
  consumer: mix test

MIX_ENV is removed from the environment, so `mix compile` uses dev and
`mix test` uses test. Output is streamed; the script exits non-zero on the
first failure and always removes the temporary directory.

Usage (from the repository root):

    python3 apps/samgita_protocol/scripts/verify_standalone.py
"""

import os
import shutil
import subprocess
import sys
import tempfile

LIBRARY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONSUMER = os.path.join("examples", "consumer")

# Build outputs and local artifacts, by path relative to the library root.
EXCLUDED = {
    "_build",
    "deps",
    "cover",
    "doc",
    "tmp",
    "erl_crash.dump",
    os.path.join(CONSUMER, "_build"),
    os.path.join(CONSUMER, "deps"),
    os.path.join(CONSUMER, "cover"),
    os.path.join(CONSUMER, "erl_crash.dump"),
}


def ignore(directory, names):
    rel = os.path.relpath(directory, LIBRARY)
    ignored = []
    for name in names:
        path = name if rel == "." else os.path.join(rel, name)
        if path in EXCLUDED or name == ".elixir_ls":
            ignored.append(name)
    return ignored


def run(step, args, cwd, env):
    print(f"\n== {step}: {' '.join(args)}  (in {cwd})", flush=True)
    code = subprocess.call(args, cwd=cwd, env=env)
    if code != 0:
        print(f"\n!! {step} failed with exit status {code}", file=sys.stderr, flush=True)
    return code


def main():
    if shutil.which("mix") is None:
        print("!! mix is not on PATH", file=sys.stderr)
        return 1

    env = dict(os.environ)
    env.pop("MIX_ENV", None)

    tmp = tempfile.mkdtemp(prefix="samgita_protocol_standalone_")
    try:
        library = os.path.join(tmp, "samgita_protocol")
        shutil.copytree(LIBRARY, library, ignore=ignore, symlinks=True)
        consumer = os.path.join(library, CONSUMER)
        if not os.path.isfile(os.path.join(consumer, "mix.exs")):
            print(f"!! {CONSUMER}/mix.exs is missing from the copy", file=sys.stderr)
            return 1
        print(f"copied {LIBRARY} -> {library}", flush=True)

        steps = [
            ("library compile", ["mix", "compile", "--warnings-as-errors"], library),
            ("library tests", ["mix", "test"], library),
            ("consumer tests", ["mix", "test"], consumer),
        ]
        for step, args, cwd in steps:
            code = run(step, args, cwd, env)
            if code != 0:
                return code
        print("\nstandalone verification passed", flush=True)
        return 0
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
