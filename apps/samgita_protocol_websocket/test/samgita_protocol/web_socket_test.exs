defmodule SamgitaProtocol.WebSocketTest do
  use ExUnit.Case
  doctest SamgitaProtocol.WebSocket

  test "greets the world" do
    assert SamgitaProtocol.WebSocket.hello() == :world
  end
end
