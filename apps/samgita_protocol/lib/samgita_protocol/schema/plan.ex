defmodule SamgitaProtocol.Schema.Plan do
  @moduledoc false
  # Compile-time helper of `Schema.Encoder` and `Schema.Checker`: turns
  # schema types into the plans they walk, and lists every object field. The
  # encoder generates one function clause per field; the checker, which
  # looks fields up by key instead, inlines each object's field lists.
  #
  # Why clauses: the encoder walks a map's pairs in order (`:maps.to_list/1`)
  # and must find each key's field. Looking a binary key up in a map of
  # fields compares it with the map's keys one by one in C (`eq` and
  # `memcmp`: 15% of an encode); matching it against generated clauses
  # (`field(object_id, "thread_id")`) compiles to inline byte comparisons.
  #
  # Plans:
  #
  #   * `{:object, id, required_count}` - a closed object; its fields are in
  #     the field list as `{id, key, plan, flag}` with flag `true`
  #     (required), `false` (optional) or `:task_ref` (optional, requires
  #     `project_ref` in the same object)
  #   * `{:list, plan, min, max}`, `{:enum, %{value => true}}`,
  #     `{:const, value}`
  #   * `:notification` for `{:ref, "notification"}`; other references are
  #     resolved
  #   * every other type as it is (`:id`, `:text`, `:json_object`, the
  #     envelope placeholders `:params` and `:result`, ...)

  alias SamgitaProtocol.Schema

  @type field :: {pos_integer(), String.t(), term(), boolean() | :task_ref}

  @doc false
  # The four envelopes as object types, in this order: a read request, a
  # mutation request, a response, a notification.
  @spec envelopes() :: [term()]
  def envelopes do
    for {kind, spec} <- [
          request: %{mutation: false},
          request: %{mutation: true},
          response: nil,
          notification: nil
        ] do
      {required, optional} = Schema.envelope(kind, spec)
      {:object, required, optional}
    end
  end

  @doc false
  # Plans for `types` (a list), and the fields of every object in them.
  @spec build([term()], map()) :: {[term()], [field()]}
  def build(types, definitions) do
    state = %{next: 1, fields: [], refs: %{}, definitions: definitions}
    {plans, state} = Enum.map_reduce(types, state, &plan/2)
    {plans, Enum.reverse(state.fields)}
  end

  defp plan({:object, required, optional}, state) do
    {id, state} = {state.next, %{state | next: state.next + 1}}
    flagged = Enum.map(required, &{&1, true}) ++ Enum.map(optional, &{&1, false})

    state =
      Enum.reduce(flagged, state, fn {{key, type}, required?}, state ->
        {plan, state} = plan(type, state)
        # The task_ref rule is checked when an optional task_ref is seen; no
        # object requires one.
        if key == "task_ref" and required?, do: raise("a required task_ref is not supported")
        flag = if key == "task_ref", do: :task_ref, else: required?
        %{state | fields: [{id, key, plan, flag} | state.fields]}
      end)

    {{:object, id, length(required)}, state}
  end

  defp plan({:list, type, min, max}, state) do
    {plan, state} = plan(type, state)
    {{:list, plan, min, max}, state}
  end

  defp plan({:enum, values}, state), do: {{:enum, Map.new(values, &{&1, true})}, state}
  defp plan({:ref, "notification"}, state), do: {:notification, state}

  defp plan({:ref, name}, state) do
    case state.refs do
      %{^name => plan} ->
        {plan, state}

      %{} ->
        {plan, state} = plan(Map.fetch!(state.definitions, name), state)
        {plan, %{state | refs: Map.put(state.refs, name, plan)}}
    end
  end

  defp plan(type, state), do: {type, state}
end
