defmodule SamgitaProtocol.Streams do
  @moduledoc false
  # The consumer side of replayable streams: one bounded buffer of
  # undelivered notifications (in arrival order) and, per stream, three
  # positions:
  #
  #   processed <= delivered <= received
  #
  # `received` advances when a notification is buffered, `delivered` when
  # `drain/2` hands it out, `processed` only when the caller acknowledges it.
  # The content (`Message.content_key/2`) of every received-but-unprocessed
  # event is retained so a conflicting replay (same cursor, different
  # content) is detected.

  alias SamgitaProtocol.{Error, Message, Outbox}

  @type stream :: %{
          processed: non_neg_integer(),
          delivered: non_neg_integer(),
          received: non_neg_integer(),
          hashes: %{pos_integer() => Message.content_key()}
        }

  @type t :: %__MODULE__{
          streams: %{String.t() => stream()},
          buffer: :queue.queue(map()),
          buffered: non_neg_integer(),
          max_buffered_notifications: pos_integer(),
          max_streams: pos_integer(),
          max_stream_hashes: pos_integer()
        }

  defstruct streams: %{},
            buffer: :queue.new(),
            buffered: 0,
            max_buffered_notifications: 128,
            max_streams: 64,
            max_stream_hashes: 128

  @spec new(map(), %{String.t() => non_neg_integer()}) :: t()
  # `checkpoints` were validated by Options.stream_positions!/3.
  def new(limits, checkpoints) do
    %__MODULE__{
      streams: Map.new(checkpoints, fn {id, cursor} -> {id, restored(cursor)} end),
      max_buffered_notifications: limits.max_buffered_notifications,
      max_streams: limits.max_streams,
      max_stream_hashes: limits.max_stream_hashes
    }
  end

  defp restored(cursor),
    do: %{processed: cursor, delivered: cursor, received: cursor, hashes: %{}}

  @doc false
  # Offers one sequenced notification (`wire`: the binary it was decoded
  # from, or nil). `{:ok, :buffered | :duplicate, t}` or
  # `{:error, error}`; on error nothing changed.
  @spec ingest(t(), map(), binary() | nil) ::
          {:ok, :buffered | :duplicate, t()} | {:error, Error.t()}
  def ingest(%__MODULE__{} = s, %{"stream_id" => id, "cursor" => cursor} = notification, wire) do
    with {:ok, stream} <- fetch_stream(s, id) do
      cond do
        cursor <= stream.processed ->
          {:ok, :duplicate, s}

        cursor <= stream.received ->
          if Message.same_content?(Map.fetch!(stream.hashes, cursor), notification) do
            {:ok, :duplicate, s}
          else
            {:error,
             Error.peer(
               :replay_conflict,
               "a stream event differs from the one already received",
               %{
                 "stream_id" => id,
                 "cursor" => cursor
               }
             )}
          end

        cursor != stream.received + 1 ->
          {:error,
           Error.peer(
             :cursor_gap,
             "stream events were skipped or reordered; resume from the checkpoint",
             %{
               "stream_id" => id,
               "expected" => stream.received + 1,
               "cursor" => cursor
             }
           )}

        s.buffered >= s.max_buffered_notifications ->
          {:error, Outbox.limit_error(:max_buffered_notifications, s.max_buffered_notifications)}

        map_size(stream.hashes) >= s.max_stream_hashes ->
          {:error, Outbox.limit_error(:max_stream_hashes, s.max_stream_hashes)}

        true ->
          stream = %{
            stream
            | received: cursor,
              hashes: Map.put(stream.hashes, cursor, Message.content_key(notification, wire))
          }

          {:ok, :buffered,
           %{
             s
             | streams: Map.put(s.streams, id, stream),
               buffer: :queue.in(notification, s.buffer),
               buffered: s.buffered + 1
           }}
      end
    end
  end

  defp fetch_stream(s, id) do
    case Map.fetch(s.streams, id) do
      {:ok, stream} ->
        {:ok, stream}

      :error when map_size(s.streams) >= s.max_streams ->
        {:error, Outbox.limit_error(:max_streams, s.max_streams)}

      :error ->
        {:ok, restored(0)}
    end
  end

  @doc false
  # Ingests a whole replay page atomically: either every event is buffered
  # (or recognised as a duplicate) or nothing changes.
  @spec ingest_all(t(), [map()]) :: {:ok, t()} | {:error, Error.t()}
  def ingest_all(s, events) do
    Enum.reduce_while(events, {:ok, s}, fn event, {:ok, s} ->
      case ingest(s, event, nil) do
        {:ok, _, s} -> {:cont, {:ok, s}}
        {:error, error} -> {:halt, {:error, error}}
      end
    end)
  end

  @spec drain(t(), non_neg_integer()) :: {[map()], t()}
  def drain(s, max), do: drain(s, max, [])

  defp drain(s, 0, acc), do: {Enum.reverse(acc), s}

  defp drain(s, max, acc) do
    case :queue.out(s.buffer) do
      {{:value, %{"stream_id" => id, "cursor" => cursor} = n}, buffer} ->
        streams = Map.update!(s.streams, id, &%{&1 | delivered: max(&1.delivered, cursor)})

        drain(%{s | buffer: buffer, buffered: s.buffered - 1, streams: streams}, max - 1, [
          n | acc
        ])

      {:empty, _} ->
        {Enum.reverse(acc), s}
    end
  end

  @spec ack(t(), String.t(), non_neg_integer()) :: {:ok, t()} | {:error, Error.t()}
  def ack(s, id, cursor) do
    case Map.fetch(s.streams, id) do
      {:ok, %{processed: processed}} when cursor <= processed ->
        {:ok, s}

      {:ok, %{delivered: delivered, processed: processed} = stream} when cursor <= delivered ->
        # Retained content is exactly the cursors after `processed`.
        hashes = Map.drop(stream.hashes, Enum.to_list((processed + 1)..cursor//1))

        {:ok,
         %{s | streams: Map.put(s.streams, id, %{stream | processed: cursor, hashes: hashes})}}

      {:ok, %{delivered: delivered}} ->
        {:error,
         Error.new(:invalid_cursor, "cannot acknowledge a cursor that was not delivered", %{
           "stream_id" => id,
           "cursor" => cursor,
           "delivered" => delivered
         })}

      :error ->
        {:error, Error.new(:invalid_cursor, "unknown stream", %{"stream_id" => id})}
    end
  end

  # Releases a finished stream: its position and retained content are
  # dropped so the slot counts no longer against `max_streams`. Refused while
  # any of its events is buffered or delivered but not acknowledged, because
  # forgetting those would lose them silently.
  @spec forget(t(), String.t()) :: {:ok, t()} | {:error, Error.t()}
  def forget(s, id) do
    case Map.fetch(s.streams, id) do
      {:ok, %{processed: p, received: r}} when p < r ->
        {:error,
         Error.new(
           :unacknowledged_events,
           "the stream has received events that were not acknowledged",
           %{"stream_id" => id, "processed" => p, "received" => r}
         )}

      _ ->
        {:ok, %{s | streams: Map.delete(s.streams, id)}}
    end
  end

  @spec checkpoints(t()) :: %{String.t() => non_neg_integer()}
  def checkpoints(s), do: Map.new(s.streams, fn {id, %{processed: p}} -> {id, p} end)

  @spec buffered(t()) :: non_neg_integer()
  def buffered(s), do: s.buffered

  @doc false
  # After a disconnect the undelivered buffer is still valid data, but the
  # caller resumes from `processed`; events between processed and received
  # will be recognised by hash.
  def position(s, id) do
    case Map.fetch(s.streams, id) do
      {:ok, stream} -> Map.take(stream, [:processed, :delivered, :received])
      :error -> nil
    end
  end
end
