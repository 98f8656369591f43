// An independent peer: a Node `ws` client (pinned in package-lock.json) runs a
// session against our listener. Usage: node ws_client_session.mjs URL TOKEN
// Prints one JSON line with what it saw; exits 1 on any unexpected outcome.
import WebSocket from "ws";

const [url, token] = process.argv.slice(2);
const out = { refused: null, initialize: null, event: null, deltas: [], approvals: 0, turn: null, closeCode: null };

function refusedStatus(headers) {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, { headers });
    ws.on("unexpected-response", (_req, res) => { resolve(res.statusCode); res.resume(); ws.terminate(); });
    ws.on("open", () => { resolve(101); ws.close(); });
    ws.on("error", () => {});
  });
}

out.refused = await refusedStatus({});
out.refusedWrong = await refusedStatus({ Authorization: "Bearer wrong" });

const ws = new WebSocket(url, { headers: { Authorization: `Bearer ${token}` } });
let n = 0;
const pending = new Map();
function request(method, params, extra = {}) {
  const id = `node-${++n}`;
  const msg = { schema_version: "1.0", type: "request", id, correlation_id: `corr-${id}`, method, params, ...extra };
  ws.send(JSON.stringify(msg));
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
let turnDone;
const turnCompleted = new Promise((r) => { turnDone = r; });

ws.on("message", (data, isBinary) => {
  if (isBinary) throw new Error("binary frame from listener");
  const msg = JSON.parse(data.toString("utf8"));
  if (msg.type === "response") {
    const p = pending.get(msg.id);
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(JSON.stringify(msg.error))); else p.resolve(msg.result);
  } else if (msg.type === "request" && msg.method === "approval/request") {
    out.approvals++;
    const { approval_id, action } = msg.params;
    ws.send(JSON.stringify({ schema_version: "1.0", type: "response", id: msg.id, correlation_id: msg.correlation_id,
      result: { approval_id, action, decision: "approve" } }));
  } else if (msg.type === "notification") {
    if (msg.method === "item/delta") out.deltas.push(msg.cursor);
    if (msg.method === "turn/completed") { out.turn = msg.params.turn.status; turnDone(); }
  }
});
ws.on("close", (code) => { out.closeCode = code; });

await new Promise((resolve, reject) => { ws.on("open", resolve); ws.on("error", reject); });
const groups = ["project_events.v1", "sessions.v1", "streaming.v1", "approvals.v1", "cancellation.v1"];
out.initialize = await request("connection/initialize", { versions: ["1.0"], capabilities: groups });
const event = { event_id: "node-evt-1", delivery_attempt_id: "a1", created_at: "2026-12-03T10:00:00Z",
  correlation_id: "node-corr", event_type: "task.created", payload: {} };
out.event = await request("project/event.receive", { event }, { command_id: "node-cmd-1" });
const thread = (await request("thread/start", {}, { command_id: "node-cmd-2" })).thread;
await request("turn/start", { thread_id: thread.thread_id, input: [{ type: "text", text: "hi" }] }, { command_id: "node-cmd-3" });
let timer;
await Promise.race([turnCompleted, new Promise((_, rej) => { timer = setTimeout(() => rej(new Error("turn timeout")), 20000); })]);
clearTimeout(timer);
// A binary frame is not part of this protocol: the listener closes with 1003.
ws.send(Buffer.from([1, 2, 3]), { binary: true });
await new Promise((r) => ws.on("close", r));
console.log(JSON.stringify(out));
