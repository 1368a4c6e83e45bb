// A JSON-RPC 2.0 client and server for the browser, over one WebSocket,
// one message per WebSocket message; then the checks the page runs.
"use strict";

class RPC {
  constructor(url, methods) {
    this.ws = new WebSocket(url);
    this.methods = methods; // the page's own methods, which the server calls
    this.nextID = 1;
    this.pending = new Map(); // id -> {resolve, reject, onItem}
    this.nullID = []; // waiters for answers with "id": null (parse errors)
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = resolve;
      this.ws.onerror = () => reject(new Error("websocket error"));
    });
    this.ws.onclose = () => {
      for (const p of this.pending.values()) p.reject(new Error("connection closed"));
      this.pending.clear();
    };
    this.ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      for (const m of Array.isArray(msg) ? msg : [msg]) this.receive(m, Array.isArray(msg));
    };
  }

  receive(m, inBatch) {
    if (typeof m.method === "string") return this.serve(m);
    if (m.id === null && !inBatch) return this.nullID.shift()?.resolve(m);
    const p = this.pending.get(m.id);
    if (!p) return;
    this.pending.delete(m.id);
    if (p.batch) return p.resolve(m);
    if ("error" in m) p.reject(Object.assign(new Error(m.error.message), m.error));
    else p.resolve(m.result);
  }

  async serve(req) {
    if (req.method === "$/stream") {
      const p = this.pending.get(req.params.id);
      if (p && p.onItem) p.onItem(req.params.item);
      return;
    }
    if (!("id" in req)) return; // a notification the page does not handle
    const fn = this.methods[req.method];
    let answer;
    if (!fn) {
      answer = { jsonrpc: "2.0", id: req.id, error: { code: -32601, message: "Method not found" } };
    } else {
      try {
        answer = { jsonrpc: "2.0", id: req.id, result: await fn(req.params) };
      } catch (e) {
        answer = { jsonrpc: "2.0", id: req.id, error: { code: -32603, message: String(e) } };
      }
    }
    this.ws.send(JSON.stringify(answer));
  }

  call(method, params, onItem) {
    const id = this.nextID++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, onItem });
      this.ws.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
    });
  }

  notify(method, params) {
    this.ws.send(JSON.stringify({ jsonrpc: "2.0", method, params }));
  }

  // batch sends [[method, params, isNotification], ...] as one message and
  // resolves to the responses in the order of the requests (null for a
  // notification).
  batch(calls) {
    const msgs = calls.map(([method, params, note]) =>
      note ? { jsonrpc: "2.0", method, params } : { jsonrpc: "2.0", id: this.nextID++, method, params });
    const answers = msgs.map((m) => !("id" in m) ? Promise.resolve(null) :
      new Promise((resolve, reject) => this.pending.set(m.id, { resolve, reject, batch: true })));
    this.ws.send(JSON.stringify(msgs));
    return Promise.all(answers);
  }

  // raw sends text as it is and resolves to the next answer with a null id.
  raw(text) {
    return new Promise((resolve, reject) => {
      this.nullID.push({ resolve, reject });
      this.ws.send(text);
    });
  }
}

function show(name, sent, got, ok) {
  const row = document.createElement("tr");
  const cells = [name, sent].map((text) => {
    const td = document.createElement("td");
    td.textContent = text;
    return td;
  });
  const td = document.createElement("td");
  const out = document.createElement("output");
  out.id = "r-" + name;
  out.className = ok ? "ok" : "bad";
  out.textContent = got;
  td.append(out);
  row.append(...cells, td);
  document.getElementById("results").append(row);
}

async function main() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/rpc";
  const rpc = new RPC(url, { whoami: async () => "the page" });
  await rpc.opened;

  // Each check: its name, what it sends (for the table), how it runs, and
  // the answer the page expects, as text.
  const checks = [
    ["add", "add [40, 2]", () => rpc.call("add", [40, 2]), "42"],
    ["echo", 'echo {"a":[1,"ü"],"b":null}',
      async () => JSON.stringify(await rpc.call("echo", { a: [1, "ü"], b: null })), '{"a":[1,"ü"],"b":null}'],
    ["hello", "hello (the server calls whoami back)", () => rpc.call("hello", {}), "hello, the page"],
    ["count", 'count {"n": 3}', async () => {
      const items = [];
      const n = await rpc.call("count", { n: 3 }, (item) => items.push(item));
      return items.join(",") + " then " + n;
    }, "1,2,3 then 3"],
    ["notes", 'notification note {"text":"hi"}, then notes', async () => {
      rpc.notify("note", { text: "hi" });
      // A notification gets no answer, and the server may start the calls
      // after it before it has run: wait for its effect, for a while.
      let notes = [];
      for (let i = 0; i < 100 && notes.length === 0; i++) {
        if (i > 0) await new Promise((resolve) => setTimeout(resolve, 20));
        notes = await rpc.call("notes", {});
      }
      return JSON.stringify(notes);
    }, '["hi"]'],
    ["batch", "[add [1, 2], nope, notification note]", async () => {
      const answers = await rpc.batch([["add", [1, 2]], ["nope", {}], ["note", { text: "batched" }, true]]);
      return answers.map((a) => a === null ? "none" : "error" in a ? a.error.code : a.result).join(" ");
    }, "3 -32601 none"],
    ["invalid", 'add ["one", 2]', async () => {
      try { await rpc.call("add", ["one", 2]); return "no error"; } catch (e) { return String(e.code); }
    }, "-32602"],
    ["parse", "{ (not JSON)", async () => {
      const a = await rpc.raw("{");
      return a.id + " " + a.error.code;
    }, "null -32700"],
  ];

  let failed = 0;
  for (const [name, sent, run, want] of checks) {
    let got;
    try {
      got = String(await run());
    } catch (e) {
      got = "error: " + (e.code ?? "") + " " + e.message;
    }
    if (got !== want) failed++;
    show(name, sent, got, got === want);
  }
  rpc.ws.close(1000);
  document.getElementById("status").textContent =
    failed === 0 ? `done: ${checks.length} checks passed` : `FAILED: ${failed} of ${checks.length} checks`;
}

main().catch((e) => {
  document.getElementById("status").textContent = "FAILED: " + e.message;
});
