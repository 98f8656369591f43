defmodule SamgitaProtocol.CodecTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Codec, Contract, Error, Schema}

  @fixtures Path.expand("../fixtures/1.0", __DIR__)
  @accepted Path.join(@fixtures, "accepted")
  @rejected Path.join(@fixtures, "rejected")
  @manifest_path Path.join(@rejected, "manifest.json")
  @external_resource @manifest_path
  @manifest @manifest_path |> File.read!() |> JSON.decode!()
  @accepted_files @accepted
                  |> File.ls!()
                  |> Enum.filter(&String.ends_with?(&1, ".json"))
                  |> Enum.sort()

  @echoed ~w(id correlation_id command_id causation_id project_ref task_ref)

  defp accepted!(file), do: File.read!(Path.join(@accepted, file))

  defp paired_request(response_file) do
    request_file = String.replace_suffix(response_file, ".response.json", ".request.json")
    JSON.decode!(accepted!(request_file))
  end

  describe "accepted fixtures" do
    for file <- @accepted_files do
      test "#{file} decodes and round-trips" do
        binary = accepted!(unquote(file))
        assert {:ok, message} = Codec.decode(binary)
        assert message == JSON.decode!(binary)
        assert {:ok, encoded} = Codec.encode(message)
        assert Codec.decode(encoded) == {:ok, message}
      end
    end

    for file <- @accepted_files, String.ends_with?(file, ".response.json") do
      test "#{file} answers its paired request" do
        {:ok, response} = Codec.decode(accepted!(unquote(file)))
        request = paired_request(unquote(file))

        for key <- @echoed do
          assert Map.get(response, key) == Map.get(request, key), "#{key} is not echoed"
        end

        case response do
          %{"result" => result} ->
            spec = Schema.method(request["method"])

            assert Contract.check_result(spec, request["params"], result, DateTime.utc_now()) ==
                     :ok

          %{"error" => error} ->
            assert %Error{origin: :remote} = Error.from_wire(error)
        end
      end
    end

    test "every method has fixtures of its kind" do
      for %{method: method, kind: kind} <- Schema.methods() do
        base = String.replace(method, "/", ".")

        files =
          case kind do
            :request -> ["#{base}.request.json", "#{base}.response.json"]
            :notification -> ["#{base}.notification.json"]
          end

        for file <- files, do: assert(file in @accepted_files, "missing #{file}")
      end
    end

    test "mutations carry command_id and reads do not" do
      for file <- @accepted_files, String.ends_with?(file, ".request.json") do
        request = JSON.decode!(accepted!(file))
        spec = Schema.method(request["method"])
        assert is_map_key(request, "command_id") == spec.mutation, file
      end
    end

    test "a contextually wrong result is refused" do
      request = JSON.decode!(accepted!("project.event.report.request.json"))
      spec = Schema.method("project/event.report")

      result = %{
        "event_id" => "evt-1",
        "report_status" => "recorded",
        "management_acceptance" => "accepted"
      }

      assert {:error, %Error{code: :invalid_result}} =
               Contract.check_result(spec, request["params"], result, DateTime.utc_now())
    end
  end

  describe "rejected fixtures" do
    test "the manifest lists every rejected file" do
      files = @rejected |> File.ls!() |> List.delete("manifest.json") |> Enum.sort()
      assert Enum.sort(Enum.map(@manifest, & &1["file"])) == files
      assert Enum.all?(@manifest, &(&1["ajv"] in ["rejects", "runtime_only"]))
      codes = Error.code_strings()
      assert Enum.all?(@manifest, &(&1["code"] in codes))
    end

    for %{"file" => file, "code" => code, "why" => why} <- @manifest do
      test "#{file} is rejected with #{code} (#{why})" do
        binary = File.read!(Path.join(@rejected, unquote(file)))
        assert {:error, %Error{code: code, origin: :peer}} = Codec.decode(binary)
        assert Atom.to_string(code) == unquote(code)
      end
    end

    test "the size bound is exact" do
      big = File.read!(Path.join(@rejected, "message_too_large.json"))
      assert byte_size(big) == Codec.default_max_message_bytes() + 1
      # One byte less of padding is accepted.
      smaller = String.replace(big, "xx", "x", global: false)
      assert byte_size(smaller) == Codec.default_max_message_bytes()
      assert {:ok, _} = Codec.decode(smaller)
    end
  end

  describe "depth on both decoder paths" do
    # Inputs up to 16 KiB are decoded with OTP's default callbacks and
    # measured afterwards; larger ones are bounded while decoding. Both must
    # give the same answers, at the bound and past it.
    setup do
      event = "project.event.receive.request.json" |> accepted!() |> JSON.decode!()
      {:ok, event: event}
    end

    for {label, padding} <- [{"small", 0}, {"large", 20_000}] do
      test "#{label} input: exactly max_depth passes, one deeper fails", %{event: event} do
        # payload is at depth 4 (envelope, params, event, payload), so its
        # 28 nested objects end at depth 32.
        ok = wire_with_payload(event, nest(27), unquote(padding))
        deep = wire_with_payload(event, nest(28), unquote(padding))
        assert byte_size(ok) > 16_384 == unquote(padding) > 0

        assert {:ok, _} = Codec.decode(ok)

        assert {:error, %Error{code: :depth_exceeded, data: %{"max" => 32}}} =
                 Codec.decode(deep)

        assert {:error, %Error{code: :depth_exceeded}} = Codec.decode(ok, max_depth: 31)
      end

      test "#{label} input: a repeated key is refused", %{event: event} do
        wire = wire_with_payload(event, %{"a" => 1}, unquote(padding))
        repeated = String.replace(wire, ~s({"a":1}), ~s({"a":1,"a":2}))

        assert {:error, %Error{code: :duplicate_key, data: %{"key" => "a"}}} =
                 Codec.decode(repeated)
      end
    end

    # A small input that fails to parse is parsed again with depth tracking,
    # so a depth violation before the failure is reported as such, as for
    # a large input.
    for {label, input} <- [
          {"a repeated key after",
           ~s({"a":1,"a":) <> String.duplicate("[", 40) <> String.duplicate("]", 40) <> "}"},
          {"trailing data after", String.duplicate("[", 40) <> String.duplicate("]", 40) <> " x"},
          {"the end of the input after", String.duplicate("[", 40)},
          {"a truncated envelope after",
           ~s({"schema_version":"1.0","type":"request","params":{"thread_id":) <>
             String.duplicate("[", 40)}
        ] do
      test "too deep before #{label}: depth_exceeded, small or large" do
        input = unquote(input)
        padded = input <> String.duplicate(" ", 17_000)
        assert {:error, %Error{code: :depth_exceeded}} = Codec.decode(input)
        assert {:error, %Error{code: :depth_exceeded}} = Codec.decode(padded)
      end
    end

    defp wire_with_payload(event, inner, padding) do
      payload = %{"inner" => inner, "pad" => String.duplicate("x", padding)}
      JSON.encode!(put_in(event, ["params", "event", "payload"], payload))
    end

    # n + 1 nested objects: %{"n" => %{"n" => ... %{}}}.
    defp nest(n), do: Enum.reduce(1..n, %{}, fn _, acc -> %{"n" => acc} end)
  end

  describe "options" do
    test "unknown options raise ArgumentError" do
      message = accepted!("thread.closed.notification.json")
      assert_raise ArgumentError, fn -> Codec.decode(message, bogus: 1) end
      assert_raise ArgumentError, fn -> Codec.encode(JSON.decode!(message), bogus: 1) end
      assert_raise ArgumentError, fn -> Codec.validate(JSON.decode!(message), bogus: 1) end
    end

    test "invalid option values raise ArgumentError" do
      message = accepted!("thread.closed.notification.json")
      assert_raise ArgumentError, fn -> Codec.decode(message, max_depth: 0) end
      assert_raise ArgumentError, fn -> Codec.decode(message, max_message_bytes: -1) end
      assert_raise ArgumentError, fn -> Codec.decode(message, max_depth: "32") end
    end

    test "bounds are configurable" do
      message = accepted!("thread.closed.notification.json")

      assert {:error, %Error{code: :message_too_large}} =
               Codec.decode(message, max_message_bytes: 10)

      assert {:error, %Error{code: :depth_exceeded}} = Codec.decode(message, max_depth: 1)
      assert {:ok, _} = Codec.decode(message, max_depth: 2)
    end

    test "a non-binary input is an error, not a crash" do
      assert {:error, %Error{code: :invalid_message}} = Codec.decode(:nope)
    end
  end

  describe "encode" do
    setup do
      {:ok, receive: JSON.decode!(accepted!("project.event.receive.request.json"))}
    end

    defp with_payload(message, payload),
      do: put_in(message, ["params", "event", "payload"], payload)

    test "refuses atom keys", %{receive: message} do
      assert {:error, %Error{code: :invalid_key, origin: :local}} =
               Codec.encode(with_payload(message, %{title: "x"}))

      assert {:error, %Error{code: :invalid_key}} = Codec.encode(Map.put(message, :extra, 1))
    end

    test "refuses tuples", %{receive: message} do
      assert {:error, %Error{code: :invalid_field}} =
               Codec.encode(with_payload(message, %{"t" => {1, 2}}))

      assert {:error, %Error{code: :invalid_field}} =
               Codec.encode(put_in(message, ["params", "event", "event_type"], {:a, :b}))
    end

    test "refuses invalid UTF-8 strings", %{receive: message} do
      assert {:error, %Error{code: :invalid_utf8}} =
               Codec.encode(with_payload(message, %{"t" => <<0xFF, 0xFE>>}))

      assert {:error, %Error{code: :invalid_utf8}} =
               Codec.encode(put_in(message, ["params", "event", "event_type"], <<0xC3, 0x28>>))

      assert {:error, %Error{code: :invalid_utf8}} =
               Codec.encode(with_payload(message, %{<<0xFF>> => 1}))
    end

    test "refuses maps deeper than 32", %{receive: message} do
      # envelope 1, params 2, event 3, payload 4: 28 more levels reach 32.
      nest = fn n -> Enum.reduce(1..n, %{}, fn _, acc -> %{"a" => acc} end) end
      assert {:ok, json} = Codec.encode(with_payload(message, nest.(28)))
      assert {:ok, _} = Codec.decode(json)

      assert {:error, %Error{code: :depth_exceeded}} =
               Codec.encode(with_payload(message, nest.(29)))

      assert {:error, %Error{code: :depth_exceeded}} =
               Codec.encode(with_payload(message, nest.(500)))
    end

    # Codec.encode/2 must never raise. A response's result is part of the
    # message it encodes, so its terms must be JSON too; improper lists are
    # not JSON anywhere.
    test "refuses non-JSON terms in a response result and improper lists" do
      response = JSON.decode!(accepted!("thread.start.response.json"))
      init = JSON.decode!(accepted!("connection.initialize.request.json"))
      deep = Enum.reduce(1..40, %{}, fn _, acc -> %{"a" => acc} end)

      inputs = [
        put_in(response, ["result", "thread", "thread_id"], {1, 2}),
        put_in(response, ["result", "thread", "thread_id"], self()),
        put_in(response, ["result", "thread", "thread_id"], <<0xFF>>),
        put_in(response, ["result", "thread", "thread_id"], [1 | 2]),
        put_in(response, ["result", "thread", "thread_id"], %{atom: 1}),
        put_in(response, ["result", "extra"], deep),
        put_in(init, ["params", "capabilities"], ["a" | "b"])
      ]

      for input <- inputs do
        outcome =
          try do
            Codec.encode(input)
          rescue
            e -> {:raised, Exception.message(e) |> String.split("\n") |> hd()}
          end

        assert {:error, %Error{}} = outcome, "encode(#{inspect(input, limit: 8)})"
      end
    end

    test "refuses messages over the size bound", %{receive: message} do
      assert {:error, %Error{code: :message_too_large}} =
               Codec.encode(message, max_message_bytes: 100)
    end
  end
end
