defmodule SamgitaProtocol.ErrorTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.Error

  test "every code round-trips through the wire form" do
    for code <- Error.codes() do
      plain = Error.new(code, "message for #{code}")
      wire = Error.to_wire(plain)
      assert wire == %{"code" => Atom.to_string(code), "message" => "message for #{code}"}
      assert Error.from_wire(wire) == %{plain | origin: :remote}

      with_data = Error.new(code, "with data", %{"path" => "/params/x", "max" => 32}, :peer)
      wire = Error.to_wire(with_data)
      assert wire["data"] == %{"path" => "/params/x", "max" => 32}
      assert Error.from_wire(wire) == %{with_data | origin: :remote}

      # The wire form survives JSON.
      assert wire |> JSON.encode!() |> JSON.decode!() |> Error.from_wire() ==
               %{with_data | origin: :remote}
    end
  end

  test "code strings match codes" do
    assert Error.code_strings() == Enum.map(Error.codes(), &Atom.to_string/1)
    assert length(Enum.uniq(Error.codes())) == length(Error.codes())
  end

  test "unknown codes are refused when building" do
    assert_raise FunctionClauseError, fn -> Error.new(:exploded, "no") end
  end

  test "errors are exceptions with a readable message" do
    assert Exception.message(Error.new(:timeout, "request timed out")) ==
             "timeout: request timed out"
  end
end
