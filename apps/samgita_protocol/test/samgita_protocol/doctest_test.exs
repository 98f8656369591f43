defmodule SamgitaProtocol.DoctestTest do
  use ExUnit.Case, async: true
  doctest SamgitaProtocol.Codec
  doctest SamgitaProtocol.Error
  doctest SamgitaProtocol.Schema
  doctest SamgitaProtocol.Event
end
