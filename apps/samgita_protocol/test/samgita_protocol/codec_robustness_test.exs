defmodule SamgitaProtocol.CodecRobustnessTest do
  # Seeded fuzzing: the codec must answer every input with {:ok, _} or
  # {:error, %Error{}} and never raise, throw or exit.
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Codec, Error}
  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.{Encoder, Validator}

  @accepted Path.expand("../fixtures/1.0/accepted", __DIR__)
  @rejected Path.expand("../fixtures/1.0/rejected", __DIR__)
  @iterations 10_000
  @json_alphabet ~c'{}[]":,.-+eE0123456789 \n\ttrufalsn\\/abcxyz_' ++ [0xC3, 0xA9, 0xFF, 0x00]

  @keys ~w(schema_version type id correlation_id command_id causation_id project_ref task_ref
           method params result error stream_id cursor event payload thread turn events input
           thread_id turn_id item approval_id action deadline code message)

  setup_all do
    fixtures =
      @accepted
      |> File.ls!()
      |> Enum.sort()
      |> Enum.map(&File.read!(Path.join(@accepted, &1)))

    {:ok, fixtures: fixtures, maps: Enum.map(fixtures, &JSON.decode!/1)}
  end

  setup do
    :rand.seed(:exsss, {1, 2, 3})
    :ok
  end

  test "random byte strings never crash decode" do
    failures =
      for i <- 1..@iterations, reduce: [] do
        acc ->
          input = if rem(i, 2) == 0, do: random_bytes(), else: random_jsonish()
          check(acc, :decode, input, fn -> Codec.decode(input) end)
      end

    assert_no_failures(failures)
  end

  test "mutated fixtures never crash decode", %{fixtures: fixtures, maps: maps} do
    failures =
      for i <- 1..@iterations, reduce: [] do
        acc ->
          input =
            if rem(i, 2) == 0 do
              fixtures |> Enum.random() |> mutate_bytes(:rand.uniform(4))
            else
              maps |> Enum.random() |> mutate_json(:rand.uniform(3)) |> JSON.encode!()
            end

          check(acc, :decode, input, fn -> Codec.decode(input) end)
      end

    assert_no_failures(failures)
  end

  test "mutated maps never crash encode", %{maps: maps} do
    failures =
      for _ <- 1..@iterations, reduce: [] do
        acc ->
          input = maps |> Enum.random() |> mutate_term(:rand.uniform(3))
          check(acc, :encode, input, fn -> Codec.encode(input) end)
      end

    assert_no_failures(failures)
  end

  # Codec.encode/2 validates and encodes in one pass (Schema.Encoder) and
  # falls back to the validator for anything it does not vouch for. It must
  # answer exactly what the two-pass reference answers: the same error
  # struct, or the same bytes as JSON.encode!/1.
  test "one-pass encode equals validate + JSON.encode! on mutated messages", %{maps: maps} do
    rejected =
      for file <- File.ls!(@rejected),
          file != "manifest.json",
          file != "message_too_large.json" do
        case @rejected |> Path.join(file) |> File.read!() |> JSON.decode() do
          {:ok, map} -> map
          _ -> nil
        end
      end

    inputs =
      maps ++
        Enum.reject(rejected, &is_nil/1) ++
        mutated(maps)

    {fast, mismatches} =
      Enum.reduce(inputs, {0, []}, fn input, {fast, bad} ->
        ours = Codec.encode(input)
        reference = reference_encode(input, [])
        fast = if match?({:ok, _}, Encoder.encode(input, 32)), do: fast + 1, else: fast
        if ours == reference, do: {fast, bad}, else: {fast, [{input, ours, reference} | bad]}
      end)

    assert mismatches == [],
           "#{length(mismatches)} differ, first: #{inspect(Enum.take(mismatches, 1))}"

    # The fast path really ran: every accepted fixture, and valid mutations.
    assert fast >= length(maps)
  end

  # Validator asks Schema.Checker first and walks again itself only to name
  # an error. Both modes must answer what the full walk answers: caller
  # terms (anything) and decoded terms (JSON, depth already bounded by the
  # decoder), for messages and for every method's result.
  test "the validator's fast path equals its full walk", %{maps: maps} do
    untrusted = %{trusted: false, max_depth: 32}
    trusted = %{trusted: true, max_depth: 32}

    mutated = mutated(maps)

    decoded =
      for input <- maps ++ mutated,
          json = safe_json(input),
          json != nil,
          not match?({:error, %{code: :depth_exceeded}}, Codec.decode(json)),
          do: JSON.decode!(json)

    results =
      for %{"result" => result} <- maps ++ mutated,
          spec <- Schema.methods(),
          spec.result,
          do: {spec, result}

    mismatches =
      Enum.reject(
        maps ++ mutated,
        &(Validator.message(&1, untrusted) == Validator.full_message(&1, untrusted))
      ) ++
        Enum.reject(
          decoded,
          &(Validator.message(&1, trusted) == Validator.full_message(&1, trusted))
        ) ++
        Enum.reject(results, fn {spec, result} ->
          Validator.result(spec, result, untrusted) ==
            Validator.full_result(spec.result, result, untrusted)
        end)

    assert mismatches == [],
           "#{length(mismatches)} differ, first: #{inspect(Enum.take(mismatches, 1))}"

    assert length(decoded) > length(maps)
  end

  # Fixtures mutated into JSON terms and into arbitrary terms, half each.
  defp mutated(maps) do
    for i <- 1..@iterations do
      map = Enum.random(maps)

      if rem(i, 2) == 0,
        do: mutate_json(map, :rand.uniform(3)),
        else: mutate_term(map, :rand.uniform(3))
    end
  end

  defp safe_json(term) do
    JSON.encode!(term)
  rescue
    _ -> nil
  end

  test "one-pass encode equals the reference at the depth and size bounds", %{maps: maps} do
    for map <- maps, depth <- 1..4, bytes <- [64, 200, 100_000] do
      opts = [max_depth: depth, max_message_bytes: bytes]
      assert Codec.encode(map, opts) == reference_encode(map, opts), inspect({map, opts})
    end
  end

  test "every accepted fixture takes the one-pass path", %{maps: maps} do
    for map <- maps do
      assert {:ok, binary} = Encoder.encode(map, 32)
      assert binary == JSON.encode!(map)
    end
  end

  defp reference_encode(input, opts) do
    with {:ok, message} <- Codec.validate(input, opts) do
      binary = JSON.encode!(message)
      max = Keyword.get(opts, :max_message_bytes, Codec.default_max_message_bytes())

      if byte_size(binary) > max,
        do:
          {:error,
           Error.new(:message_too_large, "message is larger than #{max} bytes", %{
             "bytes" => byte_size(binary),
             "max" => max
           })},
        else: {:ok, binary}
    end
  end

  # Inputs up to 16 KiB are decoded untracked and bounded in depth by the
  # schema walk; padded past 16 KiB with trailing whitespace the same input
  # takes the depth-tracking decoder. Both must answer alike.
  test "small and large decoder paths agree on mutated fixtures", %{
    fixtures: fixtures,
    maps: maps
  } do
    padding = String.duplicate(" ", 16_384)

    mismatches =
      for i <- 1..div(@iterations, 2),
          input =
            (case rem(i, 3) do
               0 ->
                 fixtures |> Enum.random() |> mutate_bytes(:rand.uniform(4))

               1 ->
                 maps |> Enum.random() |> mutate_json(:rand.uniform(3)) |> JSON.encode!()

               # A run of brackets past max_depth, often with a syntax error
               # or a repeated key after it.
               2 ->
                 fixtures
                 |> Enum.random()
                 |> insert_brackets()
                 |> mutate_bytes(:rand.uniform(2) - 1)
             end),
          small = outcome(Codec.decode(input)),
          large = outcome(Codec.decode(input <> padding)),
          small != large,
          do: {input, small, large}

    assert mismatches == [],
           "#{length(mismatches)} differ, first: #{inspect(Enum.take(mismatches, 1))}"
  end

  defp insert_brackets(binary) do
    pos = :rand.uniform(byte_size(binary) + 1) - 1
    <<pre::binary-size(pos), post::binary>> = binary
    open = String.duplicate(Enum.random(["[", ~s({"k":)]), 30 + :rand.uniform(10))
    pre <> open <> post
  end

  # The padding itself changes what a syntax error message says about the
  # end of the input; everything else must be equal.
  defp outcome({:error, %Error{code: :invalid_json} = e}), do: {:error, e.code, e.origin}
  defp outcome(other), do: other

  test "every accepted fixture still decodes after whitespace changes", %{fixtures: fixtures} do
    for binary <- fixtures do
      assert {:ok, _} = Codec.decode(" \n\t" <> binary <> " \r\n")
    end
  end

  # -- harness ---------------------------------------------------------------

  # Fails with the failures grouped by kind and message (count and one
  # sample input each), so a regression is readable.
  defp assert_no_failures([]), do: :ok

  defp assert_no_failures(failures) do
    summary =
      failures
      |> Enum.group_by(fn {op, kind, reason, _} -> {op, kind, first_line(reason)} end)
      |> Enum.map_join("\n", fn {{op, kind, reason}, list} ->
        {_, _, _, sample} = List.last(list)

        "  #{length(list)} x #{op} #{kind}: #{reason}\n    sample: #{inspect(sample, limit: 12, printable_limit: 120)}"
      end)

    flunk("#{length(failures)} inputs made the codec raise or return a bad value:\n#{summary}")
  end

  defp first_line(reason) when is_binary(reason), do: reason |> String.split("\n") |> hd()
  defp first_line(reason), do: inspect(reason, limit: 5)

  defp check(acc, op, input, fun) do
    case safely(fun) do
      {:ok, {:ok, _}} -> acc
      {:ok, {:error, %Error{}}} -> acc
      {:ok, other} -> [{op, :bad_return, other, input} | acc]
      {:raised, kind, reason} -> [{op, kind, reason, input} | acc]
    end
  end

  defp safely(fun) do
    {:ok, fun.()}
  rescue
    e -> {:raised, :error, Exception.message(e)}
  catch
    kind, reason -> {:raised, kind, reason}
  end

  # -- generators ------------------------------------------------------------

  defp random_bytes, do: :rand.bytes(:rand.uniform(256) - 1)

  defp random_jsonish do
    alphabet = List.to_tuple(@json_alphabet)
    n = :rand.uniform(200) - 1
    for _ <- 1..n//1, into: <<>>, do: <<elem(alphabet, :rand.uniform(tuple_size(alphabet)) - 1)>>
  end

  # Byte-level: flips, inserts, deletes, truncation.
  defp mutate_bytes(binary, 0), do: binary

  defp mutate_bytes(binary, n) do
    size = byte_size(binary)
    pos = if size == 0, do: 0, else: :rand.uniform(size) - 1

    mutated =
      case :rand.uniform(4) do
        1 when size > 0 ->
          <<pre::binary-size(pos), byte, post::binary>> = binary
          <<pre::binary, Bitwise.bxor(byte, Bitwise.bsl(1, :rand.uniform(8) - 1)), post::binary>>

        2 ->
          <<pre::binary-size(pos), post::binary>> = binary
          <<pre::binary, :rand.uniform(256) - 1, post::binary>>

        3 when size > 0 ->
          <<pre::binary-size(pos), _, post::binary>> = binary
          pre <> post

        _ ->
          binary_part(binary, 0, pos)
      end

    mutate_bytes(mutated, n - 1)
  end

  # Term-level, JSON-representable: replace, delete or add at a random path.
  defp mutate_json(term, 0), do: term
  defp mutate_json(term, n), do: term |> mutate_at(&random_json/0) |> mutate_json(n - 1)

  # Term-level, anything: also non-JSON terms (atoms, tuples, atom keys,
  # invalid UTF-8, deep nesting, pids, functions).
  defp mutate_term(term, 0), do: term
  defp mutate_term(term, n), do: term |> mutate_at(&random_term/0) |> mutate_term(n - 1)

  defp mutate_at(map, gen) when is_map(map) and map_size(map) > 0 do
    key = map |> Map.keys() |> Enum.random()

    case :rand.uniform(6) do
      1 -> Map.delete(map, key)
      2 -> Map.put(map, random_key(), gen.())
      3 -> Map.put(map, key, gen.())
      _ -> Map.put(map, key, mutate_at(Map.fetch!(map, key), gen))
    end
  end

  # An improper list (generated by random_term/0) is replaced as a whole.
  defp mutate_at([_ | tail], gen) when not is_list(tail), do: gen.()

  defp mutate_at([_ | _] = list, gen) do
    i = :rand.uniform(length(list)) - 1

    case :rand.uniform(4) do
      1 -> List.delete_at(list, i)
      2 -> List.insert_at(list, i, gen.())
      _ -> List.update_at(list, i, &mutate_at(&1, gen))
    end
  end

  defp mutate_at(_scalar, gen), do: gen.()

  defp random_key do
    case :rand.uniform(4) do
      1 -> "k#{:rand.uniform(100)}"
      _ -> Enum.random(@keys)
    end
  end

  defp random_json do
    case :rand.uniform(14) do
      1 ->
        nil

      2 ->
        true

      3 ->
        false

      4 ->
        :rand.uniform(1_000_000) - 500_000

      5 ->
        :rand.uniform() * 1.0e10

      6 ->
        0

      7 ->
        ""

      8 ->
        String.duplicate("é", :rand.uniform(300))

      9 ->
        Enum.random(["1.0", "request", "response", "notification", "thread/closed", "turn/start"])

      10 ->
        "2026-02-30T10:00:00Z"

      11 ->
        []

      12 ->
        %{}

      13 ->
        %{Enum.random(@keys) => "x", "task_ref" => "t"}

      14 ->
        nest(:rand.uniform(40))
    end
  end

  defp random_term do
    case :rand.uniform(10) do
      1 -> :an_atom
      2 -> {:a, "tuple"}
      3 -> %{atom_key: "v"}
      4 -> <<0xFF, 0xC3>>
      5 -> %{<<0xFF>> => 1}
      6 -> self()
      7 -> fn -> :ok end
      8 -> [1 | 2]
      9 -> nest(:rand.uniform(60))
      10 -> random_json()
    end
  end

  defp nest(n) do
    Enum.reduce(1..n, %{}, fn _, acc -> if rem(n, 2) == 0, do: [acc], else: %{"a" => acc} end)
  end
end
