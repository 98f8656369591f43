defmodule SamgitaProtocol.WebSocketPackageTest do
  use ExUnit.Case, async: true

  test "the package starts nothing and has no dependencies" do
    Application.load(:samgita_protocol_websocket)
    assert Application.spec(:samgita_protocol_websocket, :mod) in [nil, []]

    assert Application.spec(:samgita_protocol_websocket, :applications) --
             [:kernel, :stdlib, :elixir] == []
  end
end
