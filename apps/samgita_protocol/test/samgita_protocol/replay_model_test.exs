defmodule SamgitaProtocol.ReplayModelTest do
  # Model-based randomized replay test, seeded from ExUnit's seed. A host
  # appends to several streams; the consumer receives live notifications over
  # a lossy, duplicating, reordering wire, disconnects, "restarts" keeping
  # only persisted checkpoints, and resumes page by page. After a final
  # resume every retained event was processed exactly once in cursor order,
  # and anything else was reported as an explicit replay_gap.
  use ExUnit.Case, async: true

  alias SamgitaProtocol.{Client, Error, Replay, Server}
  alias SamgitaProtocol.Test.{Pair, StreamHost}

  @runs 1_000
  @streams ["s1", "s2", "s3"]

  test "every retained event is processed exactly once, in order, or is an explicit gap" do
    :rand.seed(:exsss, {ExUnit.configuration()[:seed], 7, 99})
    for _ <- 1..@runs, do: run()
  end

  defp run do
    replays = Map.new(@streams, &{&1, Replay.new(&1, max_events: Enum.random([5, 40, 200]))})

    m = %{
      replays: replays,
      wire: [],
      processed: Map.new(@streams, &{&1, []}),
      gaps: %{},
      checkpoints: nil,
      # Small, so live notifications hit the bound (see ingest/2).
      buffer: 16
    }

    m = connect(m)
    m = Enum.reduce(1..Enum.random(10..60), m, fn _, m -> step(m, Enum.random(actions())) end)
    m = Enum.reduce(@streams, m, &resume(&2, &1))

    for stream <- @streams do
      processed = Enum.reverse(m.processed[stream])
      last = Replay.last_cursor(m.replays[stream])
      # Exactly once, in order: strictly consecutive except at recorded gaps.
      processed
      |> Enum.chunk_every(2, 1, :discard)
      |> Enum.each(fn [a, b] ->
        assert b == a + 1 or b in Map.get(m.gaps, stream, []), "stream #{stream}: #{a} then #{b}"
      end)

      assert processed == [] or hd(processed) == 1 or hd(processed) in Map.get(m.gaps, stream, [])
      assert (List.last(processed) || 0) == last, "stream #{stream}: not caught up"
    end
  end

  defp actions,
    do: [
      :append,
      :append,
      :append,
      :receive,
      :receive,
      :receive,
      :process,
      :disconnect,
      :restart,
      :resume
    ]

  defp connect(m) do
    opts = [host_id: "h", max_buffered_notifications: m.buffer]
    opts = if m.checkpoints, do: Keyword.put(opts, :checkpoints, m.checkpoints), else: opts
    {:ok, c} = Client.new(opts)
    {:ok, s} = Server.new(StreamHost, m.replays, capabilities: ["streaming.v1"], host_id: "h")
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, [resp], s} = Pair.deliver(s, init)
    {:ok, [{:response, _, _}], c} = Client.receive(c, Pair.wire(resp))
    Map.merge(m, %{c: c, s: s})
  end

  defp step(m, :append) do
    stream = Enum.random(@streams)

    n = %{
      "schema_version" => "1.0",
      "type" => "notification",
      "method" => "item/delta",
      "params" => %{
        "thread_id" => "t",
        "turn_id" => "u",
        "item_id" => stream,
        "delta" => "#{:rand.uniform(1000)}"
      }
    }

    {:ok, sequenced, r} = Replay.append(m.replays[stream], n)
    wire = if :rand.uniform(5) == 1, do: m.wire, else: [sequenced | m.wire]
    %{m | replays: Map.put(m.replays, stream, r), wire: wire}
  end

  defp step(%{wire: []} = m, :receive), do: m

  defp step(m, :receive) do
    # Oldest first usually; sometimes a random one (reorder) and sometimes
    # keep it for a duplicate delivery.
    n = if :rand.uniform(4) == 1, do: Enum.random(m.wire), else: List.last(m.wire)
    wire = if :rand.uniform(4) == 1, do: m.wire, else: List.delete(m.wire, n)

    case Client.receive(m.c, Pair.wire(n)) do
      {:ok, [], c} ->
        %{m | c: c, wire: wire}

      {:error, %Error{code: code}, c} when code in [:cursor_gap, :limit_exceeded] ->
        %{m | c: c, wire: wire}
    end
  end

  defp step(m, :process), do: process(m)

  defp step(m, :disconnect) do
    {:ok, _, c} = Client.disconnect(m.c)
    {:ok, c} = Client.reconnect(c)
    {:ok, init, c} = Client.request(c, "connection/initialize", %{})
    {:ok, s} = Server.new(StreamHost, m.replays, capabilities: ["streaming.v1"], host_id: "h")
    {:ok, [resp], s} = Pair.deliver(s, init)
    {:ok, [{:response, _, _}], c} = Client.receive(c, Pair.wire(resp))
    %{m | c: c, s: s, wire: []}
  end

  defp step(m, :restart) do
    # Only the persisted checkpoints survive a process restart.
    connect(%{m | checkpoints: Client.checkpoints(m.c), wire: []})
  end

  defp step(m, :resume), do: resume(m, Enum.random(@streams))

  defp process(m) do
    {:ok, events, c} = Client.drain(m.c, Enum.random([1, 5, 200]))

    Enum.reduce(events, %{m | c: c}, fn %{"stream_id" => s, "cursor" => cursor}, m ->
      {:ok, c} = Client.ack_cursor(m.c, s, cursor)
      %{m | c: c, processed: Map.update!(m.processed, s, &[cursor | &1])}
    end)
  end

  defp resume(m, stream) do
    m = process(m)
    from = Client.checkpoints(m.c)["streams"][stream] || 0
    s = %{m.s | host_state: m.replays}

    {:ok, req, c} =
      Client.request(m.c, "stream/resume", %{"stream_id" => stream, "cursor" => from})

    {:ok, [resp], s} = Pair.deliver(s, req)

    case Client.receive(c, Pair.wire(resp)) do
      {:ok, [{:response, _, page}], c} ->
        case ingest(%{m | c: c, s: s}, page) do
          {:ok, m} ->
            if page["has_more"], do: resume(m, stream), else: m

          {:page_too_large, m} ->
            # More new events than the whole buffer holds (pages go up to
            # 128 events): the consumer restarts from its checkpoints with a
            # buffer a full page fits in, and resumes again.
            m = connect(%{m | checkpoints: Client.checkpoints(m.c), buffer: 128, wire: []})
            resume(m, stream)
        end

      {:ok, [{:error, _, %Error{code: :replay_gap}}], c} ->
        # Explicit loss: the consumer decides to continue from the oldest
        # retained event, by restoring a checkpoint it chose.
        first = Replay.first_cursor(m.replays[stream])
        cp = put_in(Client.checkpoints(c), ["streams", stream], first - 1)
        m = %{m | gaps: Map.update(m.gaps, stream, [first], &[first | &1])}
        m = connect(%{m | checkpoints: cp, wire: []})
        resume(m, stream)
    end
  end

  # A page whose new events do not fit next to the live events still
  # buffered is refused whole (limit_exceeded, nothing buffered): process
  # the buffer, then ingest the same page again.
  defp ingest(m, page) do
    case Client.receive_replay(m.c, page) do
      {:ok, [], c} ->
        {:ok, process_all(%{m | c: c})}

      {:error, %Error{code: :limit_exceeded}, c} ->
        m = %{m | c: c}

        if Client.buffered(c) > 0,
          do: m |> process_all() |> ingest(page),
          else: {:page_too_large, m}
    end
  end

  defp process_all(m) do
    if Client.buffered(m.c) == 0, do: m, else: m |> process() |> process_all()
  end
end
