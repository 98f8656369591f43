defmodule SamgitaProtocol.ClientTest do
  use ExUnit.Case, async: true
  doctest SamgitaProtocol.Client

  alias SamgitaProtocol.{Client, Error, FakeHost, Message, Schema, Server}
  alias SamgitaProtocol.Test.Pair

  defp ready(opts \\ []) do
    {c, s, _} = Pair.new(opts)
    {c, s}
  end

  defp start_turn(c, n),
    do: Client.request(c, "thread/start", %{}, command_id: "cmd-#{n}", now: 0)

  test "disconnect: mutations become uncertain, reads are disconnected, nothing is re-sent" do
    {c, _s} = ready()
    {:ok, m, c} = start_turn(c, 1)
    {:ok, r, c} = Client.request(c, "thread/read", %{"thread_id" => "t"}, now: 0)
    {:ok, effects, c} = Client.disconnect(c)

    codes = Map.new(effects, fn {:error, id, e} -> {id, e.code} end)
    assert codes == %{m["id"] => :ambiguous_disconnect, r["id"] => :disconnected}
    assert %{request: ^m, reason: :disconnect} = Client.uncertain(c)[m["id"]]

    assert {:error, %Error{code: :disconnected}, _} =
             Client.request(c, "thread/start", %{}, command_id: "x")

    {:ok, c} = Client.reconnect(c)
    assert Client.state(c) == :new
    assert Client.pending(c) == %{}
    assert Map.has_key?(Client.uncertain(c), m["id"])
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    assert String.starts_with?(init["id"], "c2-")

    assert {:error, %Error{code: :unknown_uncertain}, c} =
             Client.resolve_uncertain(c, "nope", :applied)

    {:ok, c} = Client.resolve_uncertain(c, m["id"], :not_applied)
    assert Client.uncertain(c) == %{}
  end

  test "default ids skip ids an explicit :id already took, across reconnects too" do
    {c, _s} = ready()
    # Initialization took c1-1; the next default ids would be c1-2, c1-3, ...
    {:ok, _, c} = Client.request(c, "thread/read", %{"thread_id" => "t"}, id: "c1-3")
    {:ok, r2, c} = Client.request(c, "thread/read", %{"thread_id" => "t"})
    {:ok, r4, c} = Client.request(c, "thread/read", %{"thread_id" => "t"})
    assert {r2["id"], r4["id"]} == {"c1-2", "c1-4"}

    # An uncertain command under an explicit id that looks like a default id
    # of the next connection keeps that id taken there.
    {:ok, _, c} =
      Client.request(c, "thread/start", %{}, command_id: "cmd-x", id: "c2-2", now: 0)

    {:ok, _effects, c} = Client.disconnect(c)
    {:ok, c} = Client.reconnect(c)
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    assert init["id"] == "c2-1"

    {:ok, s} =
      Server.new(FakeHost, FakeHost.new(), capabilities: Schema.groups(), host_id: "host-1")

    {:ok, [resp], _s} = Server.receive(s, Pair.wire(init))
    {:ok, _, c} = Client.receive(c, Pair.wire(resp))
    {:ok, r, _c} = Client.request(c, "thread/read", %{"thread_id" => "t"})
    assert r["id"] == "c2-3"
  end

  test "a custom id generator's ids are used as given; one in use is a conflict" do
    {c, _s} = ready(id_generator: fn gen, n -> "g#{gen}:#{div(n, 2)}" end)
    # Initialization was "g1:0"; n = 2 gives "g1:1", n = 3 "g1:1" again.
    {:ok, r, c} = Client.request(c, "thread/read", %{"thread_id" => "t"})
    assert r["id"] == "g1:1"

    assert {:error, %Error{code: :conflict}, _c} =
             Client.request(c, "thread/read", %{"thread_id" => "t"})
  end

  test "expire: timeouts for reads, ambiguity for mutations, late replies are conflicting" do
    {c, s} = ready()
    {:ok, m, c} = start_turn(c, 1)
    {:ok, r, c} = Client.request(c, "thread/read", %{"thread_id" => "t"}, now: 0)
    assert {:ok, [], c} = Client.expire(c, 29_999)
    {:ok, effects, c} = Client.expire(c, 30_000)
    codes = Map.new(effects, fn {:error, id, e} -> {id, e.code} end)
    assert codes == %{m["id"] => :ambiguous_disconnect, r["id"] => :timeout}

    {:ok, [late], _} = Pair.deliver(s, m)
    assert {:error, %Error{code: :conflicting_response}, c} = Client.receive(c, Pair.wire(late))
    assert Map.has_key?(Client.uncertain(c), m["id"])

    assert {:error, %Error{code: :conflict}, _} =
             Client.request(c, "thread/read", %{"thread_id" => "t"}, id: r["id"])
  end

  test "duplicate responses are suppressed, conflicting ones fail, unknown ones have no effect" do
    {c, s} = ready()
    {:ok, m, c} = start_turn(c, 1)
    {:ok, [resp], _} = Pair.deliver(s, m)
    {:ok, [{:response, _, _}], c} = Client.receive(c, Pair.wire(resp))
    assert {:ok, [], c} = Client.receive(c, Pair.wire(resp))

    other = put_in(resp, ["result", "thread", "status"], "closed")
    assert {:error, %Error{code: :conflicting_response}, ^c} = Client.receive(c, Pair.wire(other))

    unknown = %{resp | "id" => "zzz"}
    assert {:error, %Error{code: :unknown_response}, ^c} = Client.receive(c, Pair.wire(unknown))
  end

  test "duplicates are recognised by content, in any wire form, small (kept by value) or large (fingerprinted)" do
    turn = fn i -> %{"turn_id" => "turn-#{i}", "thread_id" => "t", "status" => "completed"} end
    thread = %{"thread_id" => "t", "status" => "idle", "created_at" => "2026-01-01T00:00:00Z"}

    for turns <- [0, 40] do
      {c, _s} = ready()
      {:ok, m, c} = Client.request(c, "thread/read", %{"thread_id" => "t"})
      resp = Message.response(m, %{"thread" => thread, "turns" => Enum.map(1..turns//1, turn)})
      bin = Pair.wire(resp)
      assert (turns == 0 and byte_size(bin) <= 1024) or byte_size(bin) > 1024

      {:ok, [{:response, _, _}], c} = Client.receive(c, bin)
      # The same content again: as bytes, re-encoded with other key order
      # and whitespace, or as a decoded map. None yields a second effect.
      reordered =
        "{ " <>
          Enum.map_join(Enum.sort(Map.keys(resp), :desc), " ,\n", fn k ->
            JSON.encode!(k) <> " : " <> JSON.encode!(resp[k])
          end) <> " }"

      assert {:ok, [], c} = Client.receive(c, bin)
      assert {:ok, [], c} = Client.receive(c, reordered)
      assert {:ok, [], c} = Client.receive(c, resp)

      # Different content under the same id, in either form, conflicts.
      other = put_in(resp, ["result", "thread", "status"], "closed")

      for form <- [other, Pair.wire(other)] do
        assert {:error, %Error{code: :conflicting_response}, ^c} = Client.receive(c, form)
      end
    end
  end

  test "responses must echo identity and carry a contextually valid result" do
    {c, s} = ready()
    {:ok, m, c} = Client.request(c, "thread/read", %{"thread_id" => "t"}, project_ref: "p1")
    mismatched = Message.response(Map.delete(m, "project_ref"), %{})

    assert {:error, %Error{code: :mismatched_response}, ^c} =
             Client.receive(c, Pair.wire(mismatched))

    wrong =
      Message.response(m, %{
        "thread" => %{
          "thread_id" => "other",
          "status" => "idle",
          "created_at" => "2026-01-01T00:00:00Z"
        },
        "turns" => []
      })

    assert {:ok, [{:error, _, %Error{code: :invalid_result}}], _} =
             Client.receive(c, Pair.wire(wrong))

    {:ok, m2, c} = start_turn(c, 2)
    {:ok, [resp], _} = Pair.deliver(s, m2)
    bad = put_in(resp, ["result", "thread", "extra"], 1)

    assert {:ok, [{:error, _, %Error{code: :invalid_result}}], c} =
             Client.receive(c, Pair.wire(bad))

    assert %{reason: :invalid_result} = Client.uncertain(c)[m2["id"]]
  end

  test "bounds fail explicitly and change nothing" do
    {c, _s} = ready(max_outstanding_requests: 2, max_uncertain_commands: 1)
    {:ok, _, c} = start_turn(c, 1)

    assert {:error, %Error{code: :limit_exceeded, data: %{"limit" => "max_uncertain_commands"}},
            ^c} = start_turn(c, 2)

    {:ok, _, c} = Client.request(c, "thread/read", %{"thread_id" => "t"})

    assert {:error, %Error{code: :limit_exceeded, data: %{"limit" => "max_outstanding_requests"}},
            ^c} =
             Client.request(c, "thread/read", %{"thread_id" => "t"})
  end

  test "mutations require command_id" do
    {c, _s} = ready()

    assert {:error, %Error{code: :missing_command_id}, ^c} =
             Client.request(c, "thread/start", %{})
  end

  test "incoming requests: bound, refusal replies, exact-request reply" do
    {c, s} = ready(max_incoming_requests: 1)

    params = fn id ->
      %{
        "approval_id" => id,
        "action" => %{"kind" => "k", "description" => "d"},
        "deadline" => "2099-01-01T00:00:00Z"
      }
    end

    {:ok, r1, s} = SamgitaProtocol.Server.request(s, "approval/request", params.("a1"))
    {:ok, r2, _s} = SamgitaProtocol.Server.request(s, "approval/request", params.("a2"))
    {:ok, [{:request, _}], c} = Client.receive(c, Pair.wire(r1))
    {:ok, [{:send, refusal}], c} = Client.receive(c, Pair.wire(r2))
    assert refusal["error"]["code"] == "limit_exceeded" and refusal["id"] == r2["id"]
    assert {:error, %Error{code: :unknown_request}, _} = Client.reply(c, r2, %{})

    assert {:ok, %{"error" => %{"code" => "not_found"}}, c} =
             Client.reply(c, r1, Error.new(:not_found, "no"))

    assert Client.incoming(c) == %{}
  end

  test "checkpoints are scoped to a host" do
    cp = %{"host_id" => "host-1", "streams" => %{"s" => 4}}
    assert {:ok, c} = Client.new(host_id: "host-1", checkpoints: cp)
    assert Client.checkpoints(c) == cp

    assert_raise ArgumentError, ~r/belong to :host_id/, fn ->
      Client.new(host_id: "host-2", checkpoints: cp)
    end

    assert_raise ArgumentError, ~r/:host_id to be given/, fn -> Client.new(checkpoints: cp) end

    # Stream ids and cursors are checked like the Server's :positions.
    for streams <- [%{"" => 1}, %{"s" => -1}, %{s: 1}] do
      assert_raise ArgumentError, ~r/expected :checkpoints to be a map from stream ids/, fn ->
        Client.new(host_id: "host-1", checkpoints: %{cp | "streams" => streams})
      end
    end

    assert_raise ArgumentError, ~r/:checkpoints to hold at most :max_streams \(1\)/, fn ->
      Client.new(
        host_id: "host-1",
        max_streams: 1,
        checkpoints: %{cp | "streams" => %{"a" => 1, "b" => 1}}
      )
    end

    {:ok, c} = Client.new(host_id: "host-2")

    {:ok, s} =
      SamgitaProtocol.Server.new(SamgitaProtocol.FakeHost, SamgitaProtocol.FakeHost.new(),
        capabilities: SamgitaProtocol.Schema.groups(),
        host_id: "host-1"
      )

    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, [resp], _} = Pair.deliver(s, init)

    assert {:ok, [{:error, _, %Error{code: :host_mismatch}}], c} =
             Client.receive(c, Pair.wire(resp))

    assert Client.state(c) == :new
  end

  test "per-call options are checked in every state: a misspelt or mistyped option raises" do
    {c, s} = ready()
    {:ok, fresh} = Client.new()
    {:ok, _, closed} = ready() |> elem(0) |> Client.disconnect()

    for client <- [c, fresh, closed] do
      assert_raise ArgumentError, ~r/unknown request option :projec_ref/, fn ->
        Client.request(client, "thread/read", %{"thread_id" => "t"}, projec_ref: "p")
      end

      assert_raise ArgumentError, ~r/expected :now to be monotonic milliseconds/, fn ->
        Client.request(client, "thread/read", %{"thread_id" => "t"}, now: DateTime.utc_now())
      end

      assert_raise ArgumentError, ~r/unknown notification option :stream/, fn ->
        Client.notify(client, "thread/closed", %{"thread_id" => "t"}, stream: "s")
      end

      # receive/3 and reply/4 take the wall clock, not request/4's monotonic one.
      assert_raise ArgumentError, ~r/expected :now to be a DateTime/, fn ->
        Client.receive(client, "{}", now: System.monotonic_time(:millisecond))
      end

      assert_raise ArgumentError, ~r/expected :now to be a DateTime/, fn ->
        Client.reply(client, %{}, %{}, now: 0)
      end
    end

    assert Client.pending(c) == %{}

    assert_raise ArgumentError, ~r/expected :now to be a DateTime/, fn ->
      SamgitaProtocol.Server.receive(s, "{}", now: 0)
    end
  end

  test "an outgoing message over max_message_bytes is refused before it is recorded" do
    {c, _s} = ready(max_message_bytes: 2_000)
    big = %{"instructions" => String.duplicate("x", 2_000)}

    assert {:error, %Error{code: :message_too_large, origin: :local}, ^c} =
             Client.request(c, "thread/start", big, command_id: "k")

    assert Client.pending(c) == %{}
    assert Client.uncertain(c) == %{}

    # Escapes count: 400 control characters are 2,400 bytes once encoded.
    ctrl = %{
      "thread_id" => "t",
      "turn_id" => "u",
      "item_id" => "i",
      "delta" => String.duplicate(<<1>>, 400)
    }

    assert {:error, %Error{code: :message_too_large}, ^c} = Client.notify(c, "item/delta", ctrl)
    assert {:ok, _, ^c} = Client.notify(c, "item/delta", %{ctrl | "delta" => "small"})

    {_c, s, _} = Pair.new([], max_message_bytes: 2_000)
    action = %{"kind" => "shell", "description" => String.duplicate("y", 2_000)}
    params = %{"approval_id" => "a", "action" => action, "deadline" => "2999-01-01T00:00:00Z"}

    assert {:error, %Error{code: :message_too_large}, _} =
             SamgitaProtocol.Server.request(s, "approval/request", params)
  end

  test "forget_stream/2 releases a finished stream's slot, never its unacknowledged events" do
    {c, _s} = ready(max_streams: 1)

    delta = fn stream, cursor ->
      %{
        "schema_version" => "1.0",
        "type" => "notification",
        "method" => "item/delta",
        "params" => %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "x"},
        "stream_id" => stream,
        "cursor" => cursor
      }
    end

    {:ok, [], c} = Client.receive(c, Pair.wire(delta.("turn-1", 1)))

    assert {:error, %Error{code: :limit_exceeded, data: %{"limit" => "max_streams"}}, ^c} =
             Client.receive(c, Pair.wire(delta.("turn-2", 1)))

    # Buffered, then delivered but unacknowledged: forgetting would lose it.
    assert {:error, %Error{code: :unacknowledged_events}, ^c} =
             Client.forget_stream(c, "turn-1")

    {:ok, [_], c} = Client.drain(c, 10)
    assert {:error, %Error{code: :unacknowledged_events}, ^c} = Client.forget_stream(c, "turn-1")

    {:ok, c} = Client.ack_cursor(c, "turn-1", 1)
    {:ok, c} = Client.forget_stream(c, "turn-1")
    assert Client.checkpoints(c)["streams"] == %{}
    {:ok, ^c} = Client.forget_stream(c, "never-seen")

    # The slot is free for the next stream.
    {:ok, [], c} = Client.receive(c, Pair.wire(delta.("turn-2", 1)))
    assert Client.buffered(c) == 1
  end
end
