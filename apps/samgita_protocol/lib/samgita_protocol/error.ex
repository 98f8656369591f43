defmodule SamgitaProtocol.Error do
  @moduledoc """
  The one error type of the core: a stable machine-readable `code`, a human
  `message`, optional JSON `data`, and where it came from.

  `origin` keeps "the caller used the API wrong or hit a local bound"
  (`:local`) apart from "the peer sent something invalid" (`:peer`) and
  "the peer answered with a typed error response" (`:remote`).

  Errors never carry secrets, stack traces or host data: handler exceptions
  become `:internal_error` with a fixed message, and `data` only holds
  protocol facts (field paths, limits, identities).

  The wire form (`to_wire/1`) is `{"code", "message", "data"?}`; see
  `docs/protocol.md` for the table of codes.
  """
  @moduledoc since: "0.1.0"

  @typedoc """
  Every stable error code. The wire form is the atom's name as a string.

  Codec: `:message_too_large`, `:invalid_utf8`, `:invalid_json`,
  `:depth_exceeded`, `:duplicate_key`, `:invalid_key`, `:invalid_message`,
  `:unsupported_version`, `:invalid_type`, `:unknown_method`, `:unknown_field`,
  `:missing_field`, `:invalid_field`, `:invalid_params`,
  `:missing_command_id`, `:unexpected_command_id`,
  `:task_ref_without_project_ref`, `:unpaired_stream_position`,
  `:invalid_response`.

  Connection: `:not_initialized`, `:already_initialized`,
  `:no_common_version`, `:missing_required_capability`, `:unsupported`,
  `:host_mismatch`, `:conflict`, `:conflicting_response`, `:unknown_response`,
  `:mismatched_response`, `:invalid_result`, `:unknown_request`,
  `:limit_exceeded`, `:ambiguous_disconnect`, `:disconnected`, `:timeout`,
  `:unknown_uncertain`, `:approval_mismatch`, `:approval_expired`,
  `:no_response_callback`, `:internal_error`, `:not_found`.

  Replay and streams: `:replay_gap`, `:replay_conflict`, `:cursor_gap`,
  `:foreign_stream`, `:invalid_cursor`, `:uncorrelated_replay`,
  `:unacknowledged_events`.
  """
  @type code ::
          :message_too_large
          | :invalid_utf8
          | :invalid_json
          | :depth_exceeded
          | :duplicate_key
          | :invalid_key
          | :invalid_message
          | :unsupported_version
          | :invalid_type
          | :unknown_method
          | :unknown_field
          | :missing_field
          | :invalid_field
          | :invalid_params
          | :missing_command_id
          | :unexpected_command_id
          | :task_ref_without_project_ref
          | :unpaired_stream_position
          | :invalid_response
          | :not_initialized
          | :already_initialized
          | :no_common_version
          | :missing_required_capability
          | :unsupported
          | :host_mismatch
          | :conflict
          | :conflicting_response
          | :unknown_response
          | :mismatched_response
          | :invalid_result
          | :unknown_request
          | :limit_exceeded
          | :ambiguous_disconnect
          | :disconnected
          | :timeout
          | :unknown_uncertain
          | :approval_mismatch
          | :approval_expired
          | :no_response_callback
          | :internal_error
          | :not_found
          | :replay_gap
          | :replay_conflict
          | :cursor_gap
          | :foreign_stream
          | :invalid_cursor
          | :uncorrelated_replay
          | :unacknowledged_events

  @typedoc "Where the error arose: local misuse or bound, invalid peer input, or a peer's typed error response."
  @type origin :: :local | :peer | :remote

  @type t :: %__MODULE__{
          code: code(),
          message: String.t(),
          data: %{optional(String.t()) => term()} | nil,
          origin: origin()
        }

  defexception code: :internal_error, message: "internal error", data: nil, origin: :local

  @codes ~w(message_too_large invalid_utf8 invalid_json depth_exceeded duplicate_key
            invalid_key invalid_message unsupported_version invalid_type unknown_method
            unknown_field missing_field invalid_field invalid_params missing_command_id
            unexpected_command_id task_ref_without_project_ref unpaired_stream_position
            invalid_response not_initialized already_initialized no_common_version
            missing_required_capability unsupported host_mismatch conflict
            conflicting_response unknown_response mismatched_response invalid_result
            unknown_request limit_exceeded ambiguous_disconnect disconnected timeout
            unknown_uncertain approval_mismatch approval_expired no_response_callback
            internal_error not_found replay_gap replay_conflict cursor_gap foreign_stream
            invalid_cursor uncorrelated_replay unacknowledged_events)a

  @doc "All stable error codes, in documentation order."
  @spec codes() :: [code()]
  def codes, do: @codes

  @doc """
  Builds an error.

  ## Examples

      iex> error = SamgitaProtocol.Error.new(:not_found, "no such event", %{"event_id" => "e1"})
      iex> {error.code, error.origin}
      {:not_found, :local}

  """
  @spec new(code(), String.t(), map() | nil, origin()) :: t()
  def new(code, message, data \\ nil, origin \\ :local) when code in @codes do
    %__MODULE__{code: code, message: message, data: data, origin: origin}
  end

  @doc false
  @spec peer(code(), String.t(), map() | nil) :: t()
  def peer(code, message, data \\ nil), do: new(code, message, data, :peer)

  @doc """
  The JSON wire form of an error: `%{"code" => ..., "message" => ...}` plus
  `"data"` when present. `origin` is local knowledge and is not sent.

  ## Examples

      iex> SamgitaProtocol.Error.to_wire(SamgitaProtocol.Error.new(:timeout, "request timed out"))
      %{"code" => "timeout", "message" => "request timed out"}

  """
  @spec to_wire(t()) :: map()
  def to_wire(%__MODULE__{code: code, message: message, data: nil}),
    do: %{"code" => Atom.to_string(code), "message" => message}

  def to_wire(%__MODULE__{code: code, message: message, data: data}),
    do: %{"code" => Atom.to_string(code), "message" => message, "data" => data}

  @doc """
  Builds a `:remote` error from a validated wire error object. Only known
  codes exist on the wire (the codec rejects others), so no atom is created
  from peer input.
  """
  @spec from_wire(map()) :: t()
  def from_wire(%{"code" => code, "message" => message} = wire) do
    %__MODULE__{
      code: code_from_string(code),
      message: message,
      data: Map.get(wire, "data"),
      origin: :remote
    }
  end

  @doc false
  @spec code_strings() :: [String.t()]
  def code_strings, do: Enum.map(@codes, &Atom.to_string/1)

  for code <- @codes do
    defp code_from_string(unquote(Atom.to_string(code))), do: unquote(code)
  end

  @impl true
  def message(%__MODULE__{code: code, message: message}), do: "#{code}: #{message}"
end
