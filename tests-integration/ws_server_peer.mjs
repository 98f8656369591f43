// An independent peer: a Node `ws` server (pinned in package-lock.json) that
// speaks just enough of the protocol for our client: initialize, a project
// event, one sequenced notification; /redirect answers 302; mode "echo"
// echoes every text message (used by the benchmark).
// Usage: node ws_server_peer.mjs TOKEN [protocol|echo]. Prints the port.
import http from "node:http";
import { WebSocketServer } from "ws";

const [token, mode = "protocol"] = process.argv.slice(2);
const server = http.createServer((req, res) => { res.writeHead(404); res.end(); });
const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20, perMessageDeflate: false });
const log = [];

server.on("upgrade", (req, socket, head) => {
  if (req.url === "/redirect") {
    socket.end("HTTP/1.1 302 Found\r\nLocation: ws://127.0.0.1:1/app-server\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  if (req.url !== "/app-server" || req.headers.authorization !== `Bearer ${token}`) {
    socket.end("HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n");
    return;
  }
  wss.handleUpgrade(req, socket, head, (ws) => wss.emit("connection", ws));
});

wss.on("connection", (ws) => {
  ws.on("message", (data, isBinary) => {
    if (mode === "echo") { ws.send(data, { binary: isBinary }); return; }
    if (isBinary) { ws.close(1003, "text frames only"); return; }
    const msg = JSON.parse(data.toString("utf8"));
    log.push(msg.method);
    const reply = (result) => {
      const r = { schema_version: "1.0", type: "response", id: msg.id, correlation_id: msg.correlation_id, result };
      if (msg.command_id !== undefined) r.command_id = msg.command_id;
      ws.send(JSON.stringify(r));
    };
    if (msg.method === "connection/initialize") {
      reply({ version: "1.0", capabilities: msg.params.capabilities.filter((c) => c !== "approvals.v1"),
        connection_id: "node-conn-1", host_id: "node-host" });
    } else if (msg.method === "project/event.receive") {
      const e = msg.params.event;
      reply({ event_id: e.event_id, delivery_attempt_id: e.delivery_attempt_id, acceptance: "received", processing_status: "pending" });
      ws.send(JSON.stringify({ schema_version: "1.0", type: "notification", method: "thread/closed",
        params: { thread_id: "thr-x" }, stream_id: "s1", cursor: 1 }));
    } else if (msg.method === "project/event.status") {
      reply({ event_id: msg.params.event_id, acceptance: "received", processing_status: "completed" });
    }
  });
});

server.listen(0, "127.0.0.1", () => { console.log(server.address().port); });
process.on("SIGTERM", () => process.exit(0));
