defmodule SamgitaProtocol.Replay do
  @moduledoc """
  A bounded **in-memory** host log of one stream's replayable notifications.

  `append/2` assigns the next contiguous positive `cursor` to unsequenced
  notifications; sequenced input must continue the stream exactly.
  Retention is bounded by `:max_events` and `:max_bytes` (oldest evicted
  first). `since/2` answers a `stream/resume` page: at most 128 events from
  `cursor + 1`, or `:replay_gap` when `cursor + 1` is no longer retained.

  Lookups are by cursor in a map, so append and since cost does not grow with
  the retained count beyond a logarithm. This log is not durable: a host that
  promises replay across restarts must persist events itself.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.{Codec, Error}

  @page 128

  @type t :: %__MODULE__{
          stream_id: String.t(),
          events: %{pos_integer() => {map(), non_neg_integer()}},
          first: pos_integer(),
          last: non_neg_integer(),
          bytes: non_neg_integer(),
          max_events: pos_integer(),
          max_bytes: pos_integer()
        }

  defstruct [
    :stream_id,
    events: %{},
    first: 1,
    last: 0,
    bytes: 0,
    max_events: 1024,
    max_bytes: 8_388_608
  ]

  @doc """
  Creates an empty log for `stream_id`.

  ## Options

    * `:max_events` - retained events. Defaults to `1024`.
    * `:max_bytes` - retained encoded bytes. Defaults to `8_388_608` (8 MiB).

  ## Examples

      iex> replay = SamgitaProtocol.Replay.new("s1")
      iex> SamgitaProtocol.Replay.last_cursor(replay)
      0

  """
  @spec new(String.t(), keyword()) :: t()
  def new(stream_id, opts \\ []) when is_binary(stream_id) do
    o =
      SamgitaProtocol.Options.validate!(opts,
        max_events: {:pos_integer, 1024},
        max_bytes: {:pos_integer, 8_388_608}
      )

    %__MODULE__{stream_id: stream_id, max_events: o.max_events, max_bytes: o.max_bytes}
  end

  @doc "The page size of `since/2`: 128 events."
  @spec page_size() :: pos_integer()
  def page_size, do: @page

  @doc "The cursor of the newest event (0 when nothing was appended)."
  @spec last_cursor(t()) :: non_neg_integer()
  def last_cursor(%__MODULE__{last: last}), do: last

  @doc "The oldest retained cursor (`last_cursor + 1` when empty)."
  @spec first_cursor(t()) :: pos_integer()
  def first_cursor(%__MODULE__{first: first}), do: first

  @doc """
  Appends a notification. Unsequenced input gets this stream's `stream_id`
  and the next cursor; sequenced input must carry this stream and exactly the
  next cursor.

  ## Error reasons

  `:foreign_stream`, `:cursor_gap`, `:limit_exceeded` (a single event larger
  than `:max_bytes`), and any codec validation code.

  ## Examples

      iex> replay = SamgitaProtocol.Replay.new("s1")
      iex> delta = %{"schema_version" => "1.0", "type" => "notification", "method" => "item/delta",
      ...>   "params" => %{"thread_id" => "t", "turn_id" => "u", "item_id" => "i", "delta" => "hi"}}
      iex> {:ok, sequenced, _replay} = SamgitaProtocol.Replay.append(replay, delta)
      iex> {sequenced["stream_id"], sequenced["cursor"]}
      {"s1", 1}

  """
  @spec append(t(), map()) :: {:ok, map(), t()} | {:error, Error.t(), t()}
  def append(%__MODULE__{} = replay, notification) when is_map(notification) do
    next = replay.last + 1

    sequenced =
      case notification do
        %{"stream_id" => _} -> notification
        %{"cursor" => _} -> notification
        _ -> Map.merge(notification, %{"stream_id" => replay.stream_id, "cursor" => next})
      end

    with :ok <- check_position(replay, sequenced, next),
         {:ok, sequenced} <- notification_only(sequenced),
         {:ok, binary} <- Codec.encode(sequenced) do
      size = byte_size(binary)

      if size > replay.max_bytes do
        {:error,
         Error.new(:limit_exceeded, "event is larger than :max_bytes", %{
           "limit" => "max_bytes",
           "max" => replay.max_bytes
         }), replay}
      else
        replay = %{
          replay
          | events: Map.put(replay.events, next, {sequenced, size}),
            last: next,
            bytes: replay.bytes + size
        }

        {:ok, sequenced, evict(replay)}
      end
    else
      {:error, error} -> {:error, error, replay}
    end
  end

  defp check_position(replay, %{"stream_id" => id, "cursor" => cursor}, next) do
    cond do
      id != replay.stream_id ->
        {:error,
         Error.new(:foreign_stream, "notification belongs to another stream", %{"stream_id" => id})}

      cursor != next ->
        {:error,
         Error.new(:cursor_gap, "sequenced input must continue the stream", %{
           "expected" => next,
           "cursor" => cursor
         })}

      true ->
        :ok
    end
  end

  defp check_position(_replay, _notification, _next), do: :ok

  defp notification_only(%{"type" => "notification"} = n), do: {:ok, n}

  defp notification_only(_),
    do: {:error, Error.new(:invalid_message, "only notifications can be replayed")}

  defp evict(%{first: first, last: last} = replay)
       when last - first + 1 > replay.max_events or replay.bytes > replay.max_bytes do
    {{_, size}, events} = Map.pop!(replay.events, first)
    evict(%{replay | events: events, first: first + 1, bytes: replay.bytes - size})
  end

  defp evict(replay), do: replay

  @doc """
  A `stream/resume` result page: events `cursor + 1 ..` (at most 128), the
  result `cursor` (last returned, or the requested cursor when empty) and
  `has_more`.

  ## Error reasons

  `:replay_gap` when `cursor + 1` is no longer retained, `:invalid_cursor`
  when `cursor` is beyond the newest event.
  """
  @spec since(t(), non_neg_integer()) :: {:ok, map()} | {:error, Error.t()}
  def since(%__MODULE__{} = replay, cursor) when is_integer(cursor) and cursor >= 0 do
    cond do
      cursor > replay.last ->
        {:error,
         Error.new(:invalid_cursor, "cursor is beyond the newest event", %{
           "cursor" => cursor,
           "last" => replay.last
         })}

      cursor == replay.last ->
        {:ok, page(replay, cursor, [], false)}

      cursor + 1 < replay.first ->
        {:error,
         Error.new(:replay_gap, "events after this cursor are no longer retained", %{
           "cursor" => cursor,
           "first_retained" => replay.first
         })}

      true ->
        upto = min(cursor + @page, replay.last)
        events = for c <- (cursor + 1)..upto//1, do: elem(Map.fetch!(replay.events, c), 0)
        {:ok, page(replay, upto, events, upto < replay.last)}
    end
  end

  defp page(replay, cursor, events, more),
    do: %{
      "stream_id" => replay.stream_id,
      "cursor" => cursor,
      "events" => events,
      "has_more" => more
    }
end
