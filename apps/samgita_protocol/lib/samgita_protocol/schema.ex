defmodule SamgitaProtocol.Schema do
  @moduledoc """
  Executable definitions of the native wire schema `1.0`.

  Every envelope, params object, result object and notification is a value of
  the small type language below. The same definitions drive runtime
  validation (`SamgitaProtocol.Codec`) and the generated JSON Schema 2020-12
  artifact (`SamgitaProtocol.Schema.Document`), so the two cannot disagree.

  ## Types

    * `:id` - a string of 1 to 256 UTF-8 bytes (opaque identity or reference)
    * `:text` - any string (bounded by the message size)
    * `:timestamp` - a UTC ISO-8601 timestamp, `YYYY-MM-DDTHH:MM:SS[.fraction]Z`
    * `:cursor` - an integer >= 0 (a resume position)
    * `:position` - an integer >= 1 (a stream sequence number)
    * `:boolean`
    * `{:enum, [String.t()]}` and `{:const, String.t()}`
    * `{:list, type, min, max}` - an array of `min..max` items
    * `{:object, required, optional}` - a closed object: every key in
      `required` must be present, keys in `optional` may be, and any other key
      is an `:unknown_field`
    * `:json_object` - a free-form JSON object (host payloads)
    * `{:ref, name}` - a named definition from `definitions/0`

  Any object with a `task_ref` field also requires `project_ref`. Inside
  envelopes, `:params` and `:result` stand for the method-specific params and
  result definitions.
  """
  @moduledoc since: "0.1.0"

  @version "1.0"
  @max_id_bytes 256

  @type type ::
          :id
          | :text
          | :timestamp
          | :cursor
          | :position
          | :boolean
          | {:enum, [String.t()]}
          | {:const, String.t()}
          | {:list, type(), non_neg_integer(), pos_integer()}
          | {:object, [{String.t(), type()}], [{String.t(), type()}]}
          | :json_object
          | {:ref, String.t()}

  @typedoc "How a method travels: a request that gets a response, or a notification."
  @type kind :: :request | :notification

  @type method_spec :: %{
          method: String.t(),
          kind: kind(),
          group: String.t() | nil,
          mutation: boolean(),
          params: type(),
          result: type() | nil
        }

  @groups ["project_events.v1", "sessions.v1", "streaming.v1", "approvals.v1", "cancellation.v1"]

  @statuses ["pending", "processing", "completed", "failed", "rejected"]

  @definitions %{
    "event" =>
      {:object,
       [
         {"event_id", :id},
         {"delivery_attempt_id", :id},
         {"created_at", :timestamp},
         {"correlation_id", :id},
         {"event_type", :id},
         {"payload", :json_object}
       ], [{"causation_id", :id}, {"project_ref", :id}, {"task_ref", :id}]},
    "thread" =>
      {:object,
       [
         {"thread_id", :id},
         {"status", {:enum, ["idle", "active", "closed"]}},
         {"created_at", :timestamp}
       ], []},
    "turn" =>
      {:object,
       [
         {"turn_id", :id},
         {"thread_id", :id},
         {"status", {:enum, ["in_progress", "completed", "interrupted", "failed"]}}
       ], []},
    "item" =>
      {:object, [{"item_id", :id}, {"type", :id}],
       [{"text", :text}, {"status", {:enum, ["completed", "failed"]}}]},
    "input_item" => {:object, [{"type", {:const, "text"}}, {"text", :text}], []},
    "action" => {:object, [{"kind", :id}, {"description", :text}], [{"details", :json_object}]},
    "error" =>
      {:object, [{"code", {:enum, SamgitaProtocol.Error.code_strings()}}, {"message", :text}],
       [{"data", :json_object}]},
    "notification" => :any_notification
  }

  @methods [
    %{
      method: "connection/initialize",
      kind: :request,
      group: nil,
      mutation: false,
      params:
        {:object, [{"versions", {:list, :id, 1, 16}}, {"capabilities", {:list, :id, 0, 16}}],
         [{"required_capabilities", {:list, :id, 0, 16}}]},
      result:
        {:object,
         [
           {"version", :id},
           {"capabilities", {:list, :id, 0, 16}},
           {"connection_id", :id},
           {"host_id", :id}
         ], []}
    },
    # project_events.v1
    %{
      method: "project/event.receive",
      kind: :request,
      group: "project_events.v1",
      mutation: true,
      params: {:object, [{"event", {:ref, "event"}}], []},
      result:
        {:object,
         [
           {"event_id", :id},
           {"delivery_attempt_id", :id},
           {"acceptance", {:enum, ["received", "durable"]}},
           {"processing_status", {:enum, @statuses}}
         ], []}
    },
    %{
      method: "project/event.status",
      kind: :request,
      group: "project_events.v1",
      mutation: false,
      params: {:object, [{"event_id", :id}], []},
      result:
        {:object,
         [
           {"event_id", :id},
           {"acceptance", {:enum, ["received", "durable"]}},
           {"processing_status", {:enum, @statuses}}
         ], []}
    },
    %{
      method: "project/event.report",
      kind: :request,
      group: "project_events.v1",
      mutation: true,
      params:
        {:object,
         [
           {"event_id", :id},
           {"outcome", {:enum, ["completed", "failed", "rejected"]}},
           {"summary", :text}
         ],
         [
           {"details", :json_object},
           {"management_request", {:object, [{"transition", :id}], [{"reason", :text}]}}
         ]},
      result:
        {:object,
         [
           {"event_id", :id},
           {"report_status", {:const, "recorded"}},
           {"management_acceptance", {:enum, ["accepted", "rejected", "not_requested"]}}
         ], []}
    },
    # sessions.v1
    %{
      method: "thread/start",
      kind: :request,
      group: "sessions.v1",
      mutation: true,
      params: {:object, [], [{"instructions", :text}, {"metadata", :json_object}]},
      result: {:object, [{"thread", {:ref, "thread"}}], []}
    },
    %{
      method: "thread/read",
      kind: :request,
      group: "sessions.v1",
      mutation: false,
      params: {:object, [{"thread_id", :id}], []},
      result:
        {:object, [{"thread", {:ref, "thread"}}, {"turns", {:list, {:ref, "turn"}, 0, 256}}], []}
    },
    %{
      method: "thread/resume",
      kind: :request,
      group: "sessions.v1",
      mutation: true,
      params: {:object, [{"thread_id", :id}], []},
      result: {:object, [{"thread", {:ref, "thread"}}], []}
    },
    %{
      method: "turn/start",
      kind: :request,
      group: "sessions.v1",
      mutation: true,
      params:
        {:object, [{"thread_id", :id}, {"input", {:list, {:ref, "input_item"}, 1, 64}}], []},
      result: {:object, [{"turn", {:ref, "turn"}}], []}
    },
    %{
      method: "turn/steer",
      kind: :request,
      group: "sessions.v1",
      mutation: true,
      params:
        {:object,
         [
           {"thread_id", :id},
           {"turn_id", :id},
           {"input", {:list, {:ref, "input_item"}, 1, 64}}
         ], []},
      result: {:object, [{"turn", {:ref, "turn"}}], []}
    },
    %{
      method: "turn/interrupt",
      kind: :request,
      group: "sessions.v1",
      mutation: true,
      params: {:object, [{"thread_id", :id}, {"turn_id", :id}], []},
      result:
        {:object,
         [
           {"thread_id", :id},
           {"turn_id", :id},
           {"interrupt_status", {:enum, ["requested", "interrupted", "already_finished"]}}
         ], []}
    },
    %{
      method: "thread/started",
      kind: :notification,
      group: "sessions.v1",
      mutation: false,
      params: {:object, [{"thread", {:ref, "thread"}}], []},
      result: nil
    },
    %{
      method: "thread/closed",
      kind: :notification,
      group: "sessions.v1",
      mutation: false,
      params: {:object, [{"thread_id", :id}], []},
      result: nil
    },
    %{
      method: "turn/started",
      kind: :notification,
      group: "sessions.v1",
      mutation: false,
      params: {:object, [{"turn", {:ref, "turn"}}], []},
      result: nil
    },
    %{
      method: "turn/completed",
      kind: :notification,
      group: "sessions.v1",
      mutation: false,
      params: {:object, [{"turn", {:ref, "turn"}}], []},
      result: nil
    },
    # streaming.v1
    %{
      method: "item/started",
      kind: :notification,
      group: "streaming.v1",
      mutation: false,
      params: {:object, [{"thread_id", :id}, {"turn_id", :id}, {"item", {:ref, "item"}}], []},
      result: nil
    },
    %{
      method: "item/delta",
      kind: :notification,
      group: "streaming.v1",
      mutation: false,
      params:
        {:object, [{"thread_id", :id}, {"turn_id", :id}, {"item_id", :id}, {"delta", :text}], []},
      result: nil
    },
    %{
      method: "item/completed",
      kind: :notification,
      group: "streaming.v1",
      mutation: false,
      params: {:object, [{"thread_id", :id}, {"turn_id", :id}, {"item", {:ref, "item"}}], []},
      result: nil
    },
    %{
      method: "stream/resume",
      kind: :request,
      group: "streaming.v1",
      mutation: false,
      params: {:object, [{"stream_id", :id}, {"cursor", :cursor}], []},
      result:
        {:object,
         [
           {"stream_id", :id},
           {"cursor", :cursor},
           {"events", {:list, {:ref, "notification"}, 0, 128}},
           {"has_more", :boolean}
         ], []}
    },
    # approvals.v1
    %{
      method: "approval/request",
      kind: :request,
      group: "approvals.v1",
      mutation: false,
      params:
        {:object, [{"approval_id", :id}, {"action", {:ref, "action"}}, {"deadline", :timestamp}],
         [{"thread_id", :id}, {"turn_id", :id}, {"reason", :text}]},
      result:
        {:object,
         [
           {"approval_id", :id},
           {"action", {:ref, "action"}},
           {"decision", {:enum, ["approve", "deny"]}}
         ], [{"reason", :text}]}
    },
    # cancellation.v1
    %{
      method: "request/cancel",
      kind: :request,
      group: "cancellation.v1",
      mutation: false,
      params: {:object, [{"request_id", :id}], [{"reason", :text}]},
      result:
        {:object,
         [{"request_id", :id}, {"cancel_status", {:enum, ["requested", "already_finished"]}}], []}
    }
  ]

  @by_name Map.new(@methods, &{&1.method, &1})

  @request_fields [
    {"schema_version", {:const, @version}},
    {"type", {:const, "request"}},
    {"id", :id},
    {"correlation_id", :id},
    {"method", :id},
    {"params", :params}
  ]
  @context_fields [{"causation_id", :id}, {"project_ref", :id}, {"task_ref", :id}]

  @doc "The native wire schema version: `\"1.0\"`."
  @spec version() :: String.t()
  def version, do: @version

  @doc "The UTF-8 byte limit of every `:id` string."
  @spec max_id_bytes() :: pos_integer()
  def max_id_bytes, do: @max_id_bytes

  @doc """
  The defined capability groups.

  ## Examples

      iex> SamgitaProtocol.Schema.groups()
      ["project_events.v1", "sessions.v1", "streaming.v1", "approvals.v1", "cancellation.v1"]

  """
  @spec groups() :: [String.t()]
  def groups, do: @groups

  @doc "Every method definition, in documentation order."
  @spec methods() :: [method_spec()]
  def methods, do: @methods

  @doc """
  The definition of one method, or `nil` when it is not defined.

  ## Examples

      iex> SamgitaProtocol.Schema.method("turn/start").mutation
      true
      iex> SamgitaProtocol.Schema.method("turn/explode")
      nil

  """
  @spec method(String.t()) :: method_spec() | nil
  # One clause per name: the compiler matches binaries by size and bytes,
  # where a lookup in a map of 20 string keys compares them one by one
  # (this runs for every message).
  for {name, spec} <- @by_name do
    def method(unquote(name)), do: unquote(Macro.escape(spec))
  end

  def method(_name), do: nil

  @doc "The named definitions referenced with `{:ref, name}`."
  @spec definitions() :: %{String.t() => type() | :any_notification}
  def definitions, do: @definitions

  @doc """
  The request methods of a capability group (what a `Handler` advertising
  that group must implement).

  ## Examples

      iex> SamgitaProtocol.Schema.request_methods("cancellation.v1")
      ["request/cancel"]

  """
  @spec request_methods(String.t()) :: [String.t()]
  def request_methods(group) do
    for %{group: ^group, kind: :request, method: m} <- @methods, do: m
  end

  @doc "The notification methods of a capability group."
  @spec notification_methods(String.t()) :: [String.t()]
  def notification_methods(group) do
    for %{group: ^group, kind: :notification, method: m} <- @methods, do: m
  end

  @doc false
  # Envelope shapes, for the validator and the document generator.
  def envelope(:request, %{mutation: mutation}) do
    command = if mutation, do: [{"command_id", :id}], else: []
    {@request_fields ++ command, @context_fields}
  end

  def envelope(:response, _) do
    {[
       {"schema_version", {:const, @version}},
       {"type", {:const, "response"}},
       {"id", :id},
       {"correlation_id", :id}
     ],
     [
       {"command_id", :id} | @context_fields
     ] ++ [{"result", :result}, {"error", {:ref, "error"}}]}
  end

  def envelope(:notification, _) do
    {[
       {"schema_version", {:const, @version}},
       {"type", {:const, "notification"}},
       {"method", :id},
       {"params", :params}
     ],
     [
       {"stream_id", :id},
       {"cursor", :position},
       {"correlation_id", :id} | @context_fields
     ]}
  end
end
