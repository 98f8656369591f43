defmodule SamgitaProtocol.Replay do
  @moduledoc """
  A bounded **in-memory** host log of one stream's replayable notifications.

  `append/2` assigns the next contiguous positive `cursor` to unsequenced
  notifications; sequenced input must continue the stream exactly.
  Retention is bounded by `:max_events` and `:max_bytes` (oldest evicted
  first). `since/2` answers a `stream/resume` page: at most 128 events from
  `cursor + 1`, or `:replay_gap` when `cursor + 1` is no longer retained.

  Events are stored in chunks aligned to the page size: chunk `k` holds
  cursors `128 * k + 1 .. 128 * k + 128`, so any page spans at most two
  chunks. Full chunks are sealed into tuples kept in a map by chunk index;
  the newest, incomplete chunk is a newest-first list, so appending is a cons.
  A page read is therefore at most two map lookups followed by contiguous
  reads, instead of one lookup per event scattered across a large map (which
  misses the cache on nearly every lookup once the log is large). Append and
  since cost thus does not grow with the retained count beyond a logarithm.
  Eviction clears the evicted slot and drops a chunk with its last event, so
  the bounds limit memory, not only what `since/2` returns.

  This log is not durable: a host that promises replay across restarts must
  persist events itself.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.{Codec, Error}

  @page 128

  # A retained event and its encoded size (kept for exact byte accounting on
  # eviction); `nil` marks an evicted slot of a sealed chunk.
  @typep entry :: {map(), non_neg_integer()}

  @type t :: %__MODULE__{
          stream_id: String.t(),
          chunks: %{non_neg_integer() => tuple()},
          tail: [entry()],
          first: pos_integer(),
          last: non_neg_integer(),
          bytes: non_neg_integer(),
          max_events: pos_integer(),
          max_bytes: pos_integer()
        }

  defstruct [
    :stream_id,
    chunks: %{},
    tail: [],
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
          | tail: [{sequenced, size} | replay.tail],
            last: next,
            bytes: replay.bytes + size
        }

        {:ok, sequenced, replay |> seal() |> evict()}
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

  # Chunk `k` holds cursors `@page * k + 1 .. @page * k + @page`: aligned with
  # `since/2` pages, so a page from any cursor spans at most two chunks.
  defp chunk_index(cursor), do: div(cursor - 1, @page)
  defp offset(cursor), do: rem(cursor - 1, @page)

  # Chunks below the tail's index are sealed. The tail is the chunk the next
  # cursor goes to; it holds the retained cursors after the last sealed one.
  defp sealed?(replay, index), do: index < div(replay.last, @page)

  # Once the tail holds its chunk's last cursor it becomes a tuple, for
  # positional reads. Slots already evicted from it are `nil`.
  defp seal(%{last: last, tail: tail} = replay) when rem(last, @page) == 0 do
    evicted = List.duplicate(nil, @page - length(tail))
    chunk = List.to_tuple(evicted ++ Enum.reverse(tail))
    %{replay | chunks: Map.put(replay.chunks, chunk_index(last), chunk), tail: []}
  end

  defp seal(replay), do: replay

  defp evict(%{first: first, last: last} = replay)
       when last - first + 1 > replay.max_events or replay.bytes > replay.max_bytes do
    {size, replay} =
      if sealed?(replay, chunk_index(first)),
        do: evict_sealed(replay),
        else: evict_tail(replay)

    evict(%{replay | first: first + 1, bytes: replay.bytes - size})
  end

  defp evict(replay), do: replay

  # Clearing the slot (or dropping the chunk with its last slot) releases the
  # event, so the retention bounds hold for memory too.
  defp evict_sealed(%{first: first} = replay) do
    index = chunk_index(first)
    chunk = Map.fetch!(replay.chunks, index)
    {_event, size} = elem(chunk, offset(first))

    chunks =
      if offset(first) == @page - 1,
        do: Map.delete(replay.chunks, index),
        else: Map.put(replay.chunks, index, put_elem(chunk, offset(first), nil))

    {size, %{replay | chunks: chunks}}
  end

  # The tail is newest first, so the oldest event is its last element. This
  # walks at most one chunk, and only when no sealed chunk is retained.
  defp evict_tail(replay) do
    {{_event, size}, tail} = List.pop_at(replay.tail, -1)
    {size, %{replay | tail: tail}}
  end

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
        {:ok, page(replay, upto, read(replay, cursor + 1, upto), upto < replay.last)}
    end
  end

  # Events `from..upto` (retained, at most one page, so one or two chunks).
  # The later chunk is read first so each slice is prepended without copying.
  defp read(replay, from, upto) do
    Enum.reduce(chunk_index(upto)..chunk_index(from)//-1, [], fn index, acc ->
      lo = max(from, index * @page + 1)
      hi = min(upto, index * @page + @page)
      read_chunk(replay, index, lo, hi, acc)
    end)
  end

  defp read_chunk(replay, index, lo, hi, acc) do
    if sealed?(replay, index) do
      replay.chunks |> Map.fetch!(index) |> slice(offset(lo), offset(hi), acc)
    else
      # The tail is newest first: skip the events after `hi`.
      replay.tail |> Enum.drop(replay.last - hi) |> prepend_oldest_first(hi - lo + 1, acc)
    end
  end

  # Slots `lo..hi` of a sealed chunk, walked backwards to prepend to `acc`.
  defp slice(_chunk, lo, hi, acc) when hi < lo, do: acc
  defp slice(chunk, lo, hi, acc), do: slice(chunk, lo, hi - 1, [elem(elem(chunk, hi), 0) | acc])

  # The first `n` entries of a newest-first list, prepended to `acc` oldest
  # first.
  defp prepend_oldest_first(_entries, 0, acc), do: acc

  defp prepend_oldest_first([{event, _size} | rest], n, acc),
    do: prepend_oldest_first(rest, n - 1, [event | acc])

  defp page(replay, cursor, events, more),
    do: %{
      "stream_id" => replay.stream_id,
      "cursor" => cursor,
      "events" => events,
      "has_more" => more
    }
end
