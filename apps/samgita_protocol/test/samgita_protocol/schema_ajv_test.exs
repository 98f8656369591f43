defmodule SamgitaProtocol.Schema.AjvTest do
  # Validates the generated JSON Schema artifact against the wire fixtures
  # with an independent implementation (Ajv, draft 2020-12, strict).
  use ExUnit.Case, async: true

  @moduletag :interop

  @package Path.expand("../..", __DIR__)
  @peers Path.expand("../../../../test/peers", __DIR__)
  @setup "scripts/setup.sh"

  test "Ajv accepts every accepted fixture and rejects the schema-detectable rejects" do
    node = System.find_executable("node")

    unless node do
      flunk("node is not installed: the Ajv interop check cannot run. Run #{@setup} first.")
    end

    unless File.exists?(Path.join(@peers, "node_modules/ajv/package.json")) do
      flunk(
        "ajv is not installed in test/peers/node_modules: run #{@setup} " <>
          "(npm ci in test/peers) first."
      )
    end

    {output, status} =
      System.cmd(
        node,
        [
          "../../test/peers/ajv_check.mjs",
          "priv/schemas/1.0/protocol.schema.json",
          "test/fixtures/1.0"
        ],
        cd: @package,
        stderr_to_stdout: true
      )

    assert status == 0, "ajv_check.mjs failed (exit #{status}):\n#{output}"
    assert {:ok, %{"ok" => true} = summary} = JSON.decode(output), output
    assert summary["strict"] == true
    assert summary["accepted"] > 0 and summary["results"] > 0 and summary["rejected"] > 0
  end
end
