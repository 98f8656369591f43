defmodule SamgitaProtocol.CodexTest do
  use ExUnit.Case
  doctest SamgitaProtocol.Codex

  test "greets the world" do
    assert SamgitaProtocol.Codex.hello() == :world
  end
end
