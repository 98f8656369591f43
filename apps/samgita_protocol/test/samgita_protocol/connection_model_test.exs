defmodule SamgitaProtocol.ConnectionModelTest do
  # Model-based randomized test of Client + Server over a lossy, duplicating,
  # reordering "network". Seeded from ExUnit's seed, so a failure reproduces
  # with `mix test --seed N`.
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Client, Error, FakeHost, Schema, Server}
  alias SamgitaProtocol.Test.Pair

  @sequences 1_000
  @steps 40
  @limits [
    max_outstanding_requests: 4,
    max_uncertain_commands: 3,
    max_completed: 8,
    max_incoming_requests: 4
  ]

  test "invariants hold across random requests, deliveries, drops, duplicates, disconnects and expiries" do
    seed = ExUnit.configuration()[:seed]
    :rand.seed(:exsss, {seed, 17, 42})

    for n <- 1..@sequences do
      run(n)
    end
  end

  defp connect(host_state) do
    {:ok, s} = Server.new(FakeHost, host_state, capabilities: Schema.groups(), host_id: "h")
    s
  end

  defp initialize(c, s) do
    {:ok, init, c} = Client.request(c, "connection/initialize", %{}, now: 0)
    {:ok, [resp], s} = Pair.deliver(s, init)
    {:ok, [{:response, _, _}], c} = Client.receive(c, Pair.wire(resp))
    {c, s}
  end

  defp run(n) do
    {:ok, c} = Client.new(@limits)
    {c, s} = initialize(c, connect(FakeHost.new()))

    model = %{
      c: c,
      s: s,
      requests: [],
      responses: [],
      issued: %{},
      terminal: MapSet.new(),
      now: 0,
      seq: n
    }

    Enum.reduce(1..@steps, model, fn _, m -> m |> step(Enum.random(actions())) |> check!() end)
    |> final_check!()
  end

  defp actions,
    do: [
      :mutate,
      :mutate,
      :read,
      :deliver,
      :deliver,
      :respond,
      :respond,
      :respond,
      :conflict,
      :drop,
      :disconnect,
      :expire,
      :resolve,
      :cancel
    ]

  defp step(m, :mutate) do
    k = map_size(m.issued)

    case Client.request(m.c, "thread/start", %{}, command_id: "cmd-#{m.seq}-#{k}", now: m.now) do
      {:ok, msg, c} ->
        %{m | c: c, requests: [msg | m.requests], issued: Map.put(m.issued, msg["id"], :mutation)}

      {:error, %Error{code: :limit_exceeded}, c} ->
        assert(c == m.c) && m
    end
  end

  defp step(m, :read), do: read(m, "thread/read", %{"thread_id" => "thread-1"})
  defp step(m, :cancel), do: read(m, "request/cancel", %{"request_id" => "c1-1"})

  defp step(%{requests: []} = m, :deliver), do: m

  defp step(m, :deliver) do
    req = Enum.random(m.requests)
    # Sometimes keep the request on the wire so it is delivered twice.
    requests = if :rand.uniform(3) == 1, do: m.requests, else: List.delete(m.requests, req)
    {:ok, out, s} = Pair.deliver(m.s, req)
    %{m | s: s, requests: requests, responses: out ++ m.responses}
  end

  defp step(%{responses: []} = m, action) when action in [:respond, :conflict], do: m

  defp step(m, :respond) do
    resp = Enum.random(m.responses)
    responses = if :rand.uniform(3) == 1, do: m.responses, else: List.delete(m.responses, resp)
    receive_response(%{m | responses: responses}, resp)
  end

  defp step(m, :conflict) do
    resp = Enum.random(m.responses)

    conflicting =
      case resp do
        %{"result" => _} ->
          %{resp | "result" => %{"bogus" => true}}
          |> Map.delete("result")
          |> Map.put("error", %{"code" => "not_found", "message" => "x"})

        %{"error" => _} ->
          %{resp | "error" => %{"code" => "timeout", "message" => "other"}}
      end

    receive_response(m, conflicting)
  end

  defp step(m, :drop) do
    case {m.requests, m.responses} do
      {[_ | rest], _} -> %{m | requests: rest}
      {[], [_ | rest]} -> %{m | responses: rest}
      _ -> m
    end
  end

  defp step(m, :disconnect) do
    before = Client.uncertain(m.c)
    {:ok, effects, c} = Client.disconnect(m.c)
    m = record(m, effects, c)
    assert Map.keys(before) -- Map.keys(Client.uncertain(c)) == []
    {:ok, c} = Client.reconnect(c)
    {c, s} = initialize(c, connect(Server.host_state(m.s)))
    # The old connection's messages are gone with it.
    %{m | c: c, s: s, requests: [], responses: []}
  end

  defp step(m, :expire) do
    now = m.now + Enum.random([0, 10_000, 30_000])
    {:ok, effects, c} = Client.expire(m.c, now)
    record(%{m | now: now}, effects, c)
  end

  defp step(m, :resolve) do
    case Map.keys(Client.uncertain(m.c)) do
      [] ->
        m

      ids ->
        {:ok, c} = Client.resolve_uncertain(m.c, Enum.random(ids), :applied)
        %{m | c: c}
    end
  end

  defp read(m, method, params) do
    case Client.request(m.c, method, params, now: m.now) do
      {:ok, msg, c} ->
        %{m | c: c, requests: [msg | m.requests], issued: Map.put(m.issued, msg["id"], :read)}

      {:error, %Error{code: :limit_exceeded}, c} ->
        assert(c == m.c) && m
    end
  end

  defp receive_response(m, resp) do
    case Client.receive(m.c, Pair.wire(resp)) do
      {:ok, effects, c} ->
        record(m, effects, c)

      {:error, %Error{code: code}, c} ->
        assert code in [:unknown_response, :conflicting_response, :mismatched_response]
        # Errors never change the uncertain set or resolve anything.
        assert Client.uncertain(c) == Client.uncertain(m.c)
        %{m | c: c}
    end
  end

  defp record(m, effects, c) do
    Enum.reduce(effects, %{m | c: c}, fn
      {tag, id, _}, m when tag in [:response, :error] ->
        # No effect for an unknown ID, and at most one terminal effect per request.
        assert Map.has_key?(m.issued, id), "effect for unknown id #{id}"
        refute MapSet.member?(m.terminal, id), "second terminal effect for #{id}"

        case {m.issued[id], List.keyfind(effects, id, 1)} do
          {:mutation, {:error, _, %Error{code: code}}}
          when code in [:ambiguous_disconnect, :invalid_result] ->
            assert Map.has_key?(Client.uncertain(c), id)

          _ ->
            :ok
        end

        %{m | terminal: MapSet.put(m.terminal, id)}
    end)
  end

  defp check!(m) do
    c = m.c
    assert map_size(Client.pending(c)) <= 4
    assert map_size(Client.uncertain(c)) <= 3
    # The terminal-identity window: at most 8 findable, 2 x 8 held.
    %{current: current, previous: previous} = c.outbox.completed
    assert SamgitaProtocol.RecentIds.size(c.outbox.completed) <= 8
    assert map_size(current) < 8 and map_size(previous) <= 8
    assert map_size(Client.incoming(c)) <= 4
    m
  end

  # Every handed-out mutation ends in exactly one of: a terminal effect, still
  # pending, or (after an ambiguous end) uncertain/resolved.
  defp final_check!(m) do
    pending = Client.pending(m.c)

    for {id, :mutation} <- m.issued do
      assert MapSet.member?(m.terminal, id) != Map.has_key?(pending, id),
             "mutation #{id} is both pending and terminal, or neither"
    end
  end
end
