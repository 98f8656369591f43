defmodule SamgitaProtocol.SizeBoundTest do
  # Codec.check_size/3 skips encoding when 6 * :erlang.external_size(term)
  # fits, on the claim that no JSON term encodes to more than 6 bytes per
  # byte of its external term format. The claim is checked here on seeded
  # random JSON terms biased toward the worst cases: strings of control
  # characters (\u00XX escapes), tiny strings, empty containers, big and
  # negative integers, floats, true/false/null.
  use ExUnit.Case, async: true

  alias SamgitaProtocol.Codec

  @terms 3_000

  test "JSON is at most 6 bytes per byte of the external term format" do
    seed = ExUnit.configuration()[:seed]
    :rand.seed(:exsss, {seed, 6, 6})

    for i <- 1..@terms do
      term = json(4)
      json = JSON.encode!(term)
      bound = 6 * :erlang.external_size(term)

      assert byte_size(json) <= bound,
             "seed #{seed}, term #{i}: #{byte_size(json)} JSON bytes > #{bound}: #{inspect(term)}"
    end
  end

  test "check_size/3 agrees with the exact size on both sides of the bound" do
    message = fn text ->
      %{
        "schema_version" => "1.0",
        "type" => "notification",
        "method" => "thread/closed",
        "params" => %{"thread_id" => "t", "x" => text}
      }
    end

    for text <- ["", "plain", String.duplicate(<<1>>, 300), String.duplicate("é", 300)] do
      exact = byte_size(JSON.encode!(message.(text)))

      assert Codec.check_size(message.(text), exact) == :ok
      assert {:error, %{code: :message_too_large}} = Codec.check_size(message.(text), exact - 1)
    end
  end

  defp json(0), do: leaf()

  defp json(depth) do
    case :rand.uniform(6) do
      1 -> Map.new(1..(:rand.uniform(4) - 1)//1, fn _ -> {string(), json(depth - 1)} end)
      2 -> Enum.map(1..(:rand.uniform(4) - 1)//1, fn _ -> json(depth - 1) end)
      _ -> leaf()
    end
  end

  defp leaf do
    case :rand.uniform(9) do
      1 -> nil
      2 -> true
      3 -> false
      4 -> :rand.uniform(300) - 150
      5 -> (:rand.uniform(1_000_000_000) - 500_000_000) * 1_000_000_000_000
      6 -> :rand.uniform() * 1.0e300 - 5.0e299
      7 -> %{}
      8 -> []
      9 -> string()
    end
  end

  # Mostly control characters and one-byte strings: the escape-heavy cases.
  # Long runs of control characters approach the bound (6 bytes out per byte
  # in, against a 5-byte string header), so a smaller factor fails here.
  defp string do
    if :rand.uniform(5) == 1,
      do: for(_ <- 1..:rand.uniform(200), into: "", do: <<:rand.uniform(32) - 1>>),
      else: short_string()
  end

  defp short_string do
    for _ <- 1..(:rand.uniform(8) - 1)//1, into: "" do
      case :rand.uniform(4) do
        1 -> <<:rand.uniform(32) - 1>>
        2 -> Enum.random(["\"", "\\", "/"])
        3 -> <<?a + :rand.uniform(26) - 1>>
        4 -> Enum.random(["é", "€", "😀"])
      end
    end
  end
end
