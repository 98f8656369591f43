defmodule SamgitaProtocol.MessageTest do
  use ExUnit.Case, async: true

  alias SamgitaProtocol.Message

  @thread_closed %{
    "schema_version" => "1.0",
    "type" => "notification",
    "method" => "thread/closed",
    "params" => %{"thread_id" => "t1"}
  }

  describe "content keys of duplicate/conflict windows" do
    test "small wire forms are kept by value, large or sliced ones by fingerprint" do
      json = ~s({"a":"b"})
      term = JSON.decode!(json)
      assert {:term, ^term} = Message.content_key(term, json)
      assert {:md5, _} = Message.content_key(term, nil)
      assert {:md5, _} = Message.content_key(term, json <> String.duplicate(" ", 2_000))

      # A frame cut out of a large transport buffer would keep the whole
      # buffer alive through the decoded strings: fingerprint it instead.
      # (Longer than 64 bytes: OTP copies shorter slices instead.)
      long = JSON.encode!(%{"a" => String.duplicate("b", 200)})
      buffer = String.duplicate(" ", 100_000) <> long
      frame = binary_part(buffer, 100_000, byte_size(long))
      assert :binary.referenced_byte_size(frame) > 100_000
      assert {:md5, _} = Message.content_key(JSON.decode!(frame), frame)
      assert {:term, _} = Message.content_key(JSON.decode!(long), long)
    end

    test "windows keep small wire forms as bytes, large or sliced ones by fingerprint" do
      message = @thread_closed
      json = JSON.encode!(message)
      assert {:wire, ^json} = Message.window_key(message, json)
      assert {:md5, _} = Message.window_key(message, nil)
      padded = json <> String.duplicate(" ", 2_000)
      assert {:md5, _} = Message.window_key(message, padded)

      buffer = String.duplicate(" ", 100_000) <> json
      frame = binary_part(buffer, 100_000, byte_size(json))
      assert {:md5, _} = Message.window_key(message, frame)
    end

    test "a window's wire form compares content, not bytes" do
      message = @thread_closed
      json = JSON.encode!(message)
      key = Message.window_key(message, json)
      # The same bytes, other bytes of the same content, or no bytes at all.
      assert Message.same_content?(key, message, json)
      assert Message.same_content?(key, message, " " <> json)
      assert Message.same_content?(key, message, nil)
      other = put_in(message, ["params", "thread_id"], "t2")
      refute Message.same_content?(key, other, JSON.encode!(other))
      refute Message.same_content?(key, other, nil)
    end

    test "both forms compare exact content, whatever form the later copy has" do
      term = %{"n" => 1, "list" => [1, 2]}

      for key <- [Message.content_key(term, "{}"), Message.content_key(term, nil)] do
        assert Message.same_content?(key, %{"list" => [1, 2], "n" => 1})
        refute Message.same_content?(key, %{"list" => [1, 2], "n" => 1.0})
        refute Message.same_content?(key, %{"list" => [2, 1], "n" => 1})
      end
    end
  end
end
