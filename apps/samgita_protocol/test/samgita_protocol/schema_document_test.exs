defmodule SamgitaProtocol.Schema.DocumentTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.Document

  @artifact Path.expand("../../priv/schemas/1.0/protocol.schema.json", __DIR__)
  @regenerate "cd apps/samgita_protocol && mix compile && " <>
                "mix run --no-compile -e 'IO.puts(JSON.encode!(SamgitaProtocol.Schema.Document.build()))' " <>
                "> priv/schemas/1.0/protocol.schema.json"

  test "the committed artifact is the generated document, byte for byte" do
    generated = JSON.encode!(Document.build()) <> "\n"
    committed = File.read!(@artifact)

    assert committed == generated, """
    priv/schemas/1.0/protocol.schema.json is out of date with SamgitaProtocol.Schema.
    Regenerate it with:

        #{@regenerate}
    """
  end

  test "the document is deterministic" do
    assert JSON.encode!(Document.build()) == JSON.encode!(Document.build())
  end

  test "every method has its definitions" do
    defs = JSON.decode!(JSON.encode!(Document.build()))["$defs"]

    for m <- Schema.methods() do
      base = Document.def_name(m.method)
      envelope = if m.kind == :request, do: "request", else: "notification"

      assert %{"type" => "object"} = defs["#{base}.#{envelope}"], "#{base}.#{envelope}"
      assert %{} = defs["#{base}.params"], "#{base}.params"
      assert defs["#{base}.#{envelope}"]["properties"]["method"] == %{"const" => m.method}

      assert defs["#{base}.#{envelope}"]["properties"]["params"] == %{
               "$ref" => "#/$defs/#{base}.params"
             }

      if m.result do
        assert %{"type" => "object"} = defs["#{base}.result"], "#{base}.result"
      else
        refute Map.has_key?(defs, "#{base}.result")
      end

      if m.kind == :request do
        assert "command_id" in defs["#{base}.request"]["required"] == m.mutation
        assert Map.has_key?(defs["#{base}.request"]["properties"], "command_id") == m.mutation
      end
    end
  end

  test "request and notification unions list every method once" do
    defs = JSON.decode!(JSON.encode!(Document.build()))["$defs"]

    for {kind, union} <- [request: "request", notification: "notification"] do
      refs = Enum.map(defs[union]["oneOf"], & &1["$ref"])

      expected =
        for %{kind: ^kind, method: m} <- Schema.methods(),
            do: "#/$defs/#{Document.def_name(m)}.#{union}"

      assert refs == expected
    end
  end
end
