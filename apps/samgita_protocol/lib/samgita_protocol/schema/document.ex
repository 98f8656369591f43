defmodule SamgitaProtocol.Schema.Document do
  @moduledoc """
  Generates the JSON Schema 2020-12 artifact
  `priv/schemas/1.0/protocol.schema.json` from `SamgitaProtocol.Schema`.

  Regenerate after a deliberate schema change with:

      mix compile
      mix run --no-compile -e 'IO.puts(JSON.encode!(SamgitaProtocol.Schema.Document.build()))' > priv/schemas/1.0/protocol.schema.json

  Keys are emitted in a fixed order (see `SamgitaProtocol.Schema.Document.Ordered`),
  so the output is byte-identical on every run.

  What JSON Schema cannot express, and only runtime validation checks: UTF-8
  byte limits (JSON Schema `maxLength` counts code points), calendar validity
  of timestamps, JSON nesting depth, duplicate object keys, invalid UTF-8 and
  message size, and every contextual rule (a result's shape for its pending
  request, echoed identity, approval binding, negotiated capabilities,
  connection state and replay order).

  Definitions are named after the method with `/` replaced by `.`:
  `turn.start.request`, `turn.start.params`, `turn.start.result`.
  """
  @moduledoc since: "0.1.0"

  alias SamgitaProtocol.Schema
  alias SamgitaProtocol.Schema.Document.Ordered

  @timestamp_pattern "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,9})?Z$"

  @doc "Builds the schema document as a JSON-encodable term."
  @spec build() :: Ordered.t()
  def build do
    requests = for %{kind: :request} = m <- Schema.methods(), do: m
    notifications = for %{kind: :notification} = m <- Schema.methods(), do: m

    method_defs =
      Enum.flat_map(Schema.methods(), fn m ->
        envelope_kind = if m.kind == :request, do: :request, else: :notification
        base = def_name(m.method)

        [
          {"#{base}.#{envelope_kind}", envelope(envelope_kind, m)},
          {"#{base}.params", type(m.params)}
        ] ++ if(m.result, do: [{"#{base}.result", type(m.result)}], else: [])
      end)

    named =
      Enum.sort(
        for {name, t} <- Schema.definitions(), name != "notification", do: {name, type(t)}
      )

    defs =
      [
        {"id",
         obj(
           type: "string",
           minLength: 1,
           maxLength: Schema.max_id_bytes(),
           description: "Opaque identity: 1 to 256 UTF-8 bytes (bytes checked at runtime)"
         )},
        {"timestamp",
         obj(
           type: "string",
           pattern: @timestamp_pattern,
           description: "UTC ISO-8601 timestamp"
         )},
        {"json_object", obj(type: "object", description: "Free-form JSON object")},
        {"request", obj(oneOf: Enum.map(requests, &ref("#{def_name(&1.method)}.request")))},
        {"response", envelope(:response, nil)},
        {"notification",
         obj(oneOf: Enum.map(notifications, &ref("#{def_name(&1.method)}.notification")))}
      ] ++ named ++ method_defs

    obj([
      {"$schema", "https://json-schema.org/draft/2020-12/schema"},
      {"$id", "urn:samgita-protocol:schema:1.0"},
      {"title", "SamgitaProtocol native wire schema 1.0"},
      {"description",
       "Generated from SamgitaProtocol.Schema. Runtime validation additionally checks byte limits, depth, duplicate keys and contextual rules."},
      {"oneOf", [ref("request"), ref("response"), ref("notification")]},
      {"$defs", obj(defs)}
    ])
  end

  @doc false
  def def_name(method), do: String.replace(method, "/", ".")

  defp envelope(:response, _) do
    {required, optional} = Schema.envelope(:response, nil)

    obj(
      type: "object",
      properties:
        obj(
          Enum.map(required ++ optional, fn
            {"result", :result} -> {"result", obj(type: "object")}
            {k, t} -> {k, type(t)}
          end)
        ),
      required: Enum.map(required, &elem(&1, 0)),
      additionalProperties: false,
      dependentRequired: obj([{"task_ref", ["project_ref"]}]),
      oneOf: [exactly("result"), exactly("error")]
    )
  end

  defp envelope(kind, m) do
    {required, optional} = Schema.envelope(kind, m)

    properties =
      Enum.map(required ++ optional, fn
        {"method", _} -> {"method", obj(const: m.method)}
        {"params", :params} -> {"params", ref("#{def_name(m.method)}.params")}
        {k, t} -> {k, type(t)}
      end)

    dependent =
      if kind == :notification,
        do: [{"task_ref", ["project_ref"]}, {"stream_id", ["cursor"]}, {"cursor", ["stream_id"]}],
        else: [{"task_ref", ["project_ref"]}]

    obj(
      type: "object",
      properties: obj(properties),
      required: Enum.map(required, &elem(&1, 0)),
      additionalProperties: false,
      dependentRequired: obj(dependent)
    )
  end

  defp type(:id), do: ref("id")
  defp type(:text), do: obj(type: "string")
  defp type(:timestamp), do: ref("timestamp")
  defp type(:cursor), do: obj(type: "integer", minimum: 0)
  defp type(:position), do: obj(type: "integer", minimum: 1)
  defp type(:boolean), do: obj(type: "boolean")
  defp type(:json_object), do: ref("json_object")
  defp type({:const, v}), do: obj(const: v)
  defp type({:enum, values}), do: obj(type: "string", enum: values)
  defp type({:ref, name}), do: ref(name)

  defp type({:list, t, min, max}),
    do: obj(type: "array", items: type(t), minItems: min, maxItems: max)

  defp type({:object, required, optional}) do
    keys = Enum.map(required ++ optional, &elem(&1, 0))

    fields = [
      type: "object",
      properties: obj(Enum.map(required ++ optional, fn {k, t} -> {k, type(t)} end)),
      required: Enum.map(required, &elem(&1, 0)),
      additionalProperties: false
    ]

    if "task_ref" in keys,
      do: obj(fields ++ [dependentRequired: obj([{"task_ref", ["project_ref"]}])]),
      else: obj(fields)
  end

  # Ajv's strictRequired wants each required key declared beside it.
  defp exactly(key), do: obj(type: "object", properties: obj([{key, true}]), required: [key])

  defp ref(name), do: obj([{"$ref", "#/$defs/#{name}"}])

  defp obj(pairs), do: %Ordered{pairs: Enum.map(pairs, fn {k, v} -> {to_string(k), v} end)}
end
