defmodule SamgitaProtocol.CodexPackageTest do
  use ExUnit.Case, async: true

  test "the package starts nothing and has no dependencies" do
    Application.load(:samgita_protocol_codex)
    assert Application.spec(:samgita_protocol_codex, :mod) in [nil, []]

    assert Application.spec(:samgita_protocol_codex, :applications) -- [:kernel, :stdlib, :elixir] ==
             []
  end
end
