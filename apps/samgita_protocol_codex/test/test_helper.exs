ExUnit.start(exclude: [:interop])
