// Unit tests of batching, retries and URL checks against a tiny local HTTP server (node:http).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { checkUrl, Client, init, retryAfterMs, TrackerError } from "../index.js";

const KEY = "trk_unit_0123456789abcdef0123456789abcdef";
let server;
let base;
let requests = [];
// Each test sets how the next requests are answered: a queue of [status, headers, body] (else 200).
let answers = [];

before(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (chunk) => { body += chunk; });
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, auth: req.headers.authorization, body: body ? JSON.parse(body) : undefined, at: Date.now() });
      const next = answers.shift();
      if (next === "drop") { req.socket.destroy(); return; }
      const [status, headers, doc] = next ?? [200, {}, null];
      let out = doc;
      if (out === null) {
        if (req.url === "/api/v1/runs") out = { id: "run1" };
        else if (req.url.endsWith("/log")) out = { logged: JSON.parse(body).batch.length };
        else out = { id: "run1", status: "finished" };
      }
      res.writeHead(status, { "content-type": "application/json", ...headers });
      res.end(JSON.stringify(out));
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

function reset() {
  requests = [];
  answers = [];
}

test("batches by count, in order, and finish() flushes the rest", async () => {
  reset();
  const run = await init({ url: base, apiKey: KEY, project: "p", name: "n", config: { lr: 0.1 }, batchSize: 3, flushInterval: 0 });
  assert.equal(run.id, "run1"); // the server's answer names the run
  for (let i = 0; i < 7; i++) run.log({ loss: i }, { step: i });
  await run.finish({ status: "finished" });
  const logs = requests.filter((r) => r.url.endsWith("/log"));
  assert.deepEqual(logs.map((r) => r.body.batch.length), [3, 3, 1]);
  assert.deepEqual(logs.flatMap((r) => r.body.batch.map((b) => b.step)), [0, 1, 2, 3, 4, 5, 6]);
  const { id, ...rest } = requests[0].body;
  assert.match(id, /^[0-9a-f]{12}$/);
  assert.deepEqual(rest, { project: "p", name: "n", config: { lr: 0.1 }, tags: [] });
  assert.equal(requests.at(-1).url, "/api/v1/runs/run1/finish");
  assert.deepEqual(requests.at(-1).body, { status: "finished" });
  assert.ok(requests.every((r) => r.auth === `Bearer ${KEY}`));
  assert.equal(run.logged, 7);
});

test("a start whose answer was lost finds its own run when sent again (409), not a second one", async () => {
  reset();
  answers = ["drop", [409, {}, { error: "run exists" }]];
  const run = await init({ url: base, apiKey: KEY, project: "p", flushInterval: 0 });
  const starts = requests.filter((r) => r.url === "/api/v1/runs");
  assert.equal(starts.length, 2);
  assert.equal(starts[0].body.id, starts[1].body.id);
  assert.equal(run.id, starts[0].body.id);
  // A run id the caller chose that exists already is an error, not a success.
  reset();
  answers = [[409, {}, { error: "run mine already exists in this store" }]];
  await assert.rejects(init({ url: base, apiKey: KEY, id: "mine" }), (err) => err.status === 409);
});

test("flushes by time", async () => {
  reset();
  const run = await init({ url: base, apiKey: KEY, batchSize: 1000, flushInterval: 50 });
  run.log({ a: 1 });
  run.log({ a: 2 });
  // No flush() called: the timer sends them (waited for up to 10 s on a busy machine).
  for (let i = 0; i < 200 && !requests.some((r) => r.url.endsWith("/log")); i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const logs = requests.filter((r) => r.url.endsWith("/log"));
  assert.equal(logs.length, 1);
  assert.deepEqual(logs[0].body.batch, [{ step: 0, metrics: { a: 1 } }, { step: 1, metrics: { a: 2 } }]);
  await run.finish();
});

test("503 with Retry-After is retried after the time it asks for", async () => {
  reset();
  const run = await init({ url: base, apiKey: KEY, batchSize: 10, flushInterval: 0 });
  answers = [[503, { "retry-after": "1" }, { error: "overloaded" }]];
  run.log({ loss: 1 }, { step: 0 });
  await run.flush();
  const logs = requests.filter((r) => r.url.endsWith("/log"));
  assert.equal(logs.length, 2, "sent again once");
  assert.deepEqual(logs[1].body, logs[0].body);
  assert.ok(logs[1].at - logs[0].at >= 900, `waited ${logs[1].at - logs[0].at} ms, Retry-After said 1 s`);
  await run.finish();
});

test("429 and a dropped connection are retried; the batch arrives once answered", async () => {
  reset();
  const run = await init({ url: base, apiKey: KEY, batchSize: 10, flushInterval: 0 });
  answers = [[429, { "retry-after": "0" }, { error: "slow down" }], "drop"];
  run.log({ loss: 1 });
  await run.flush();
  const logs = requests.filter((r) => r.url.endsWith("/log"));
  assert.equal(logs.length, 3);
  assert.equal(run.queue.length, 0);
  assert.equal(run.logged, 1);
  await run.finish();
});

test("a 400 is not retried, and the batch stays queued for the next flush", async () => {
  reset();
  const run = await init({ url: base, apiKey: KEY, batchSize: 10, flushInterval: 0 });
  answers = [[400, {}, { error: "record 0: metrics: bad" }]];
  run.log({ loss: 1 });
  await assert.rejects(run.flush(), (err) => err instanceof TrackerError && err.status === 400 && /record 0/.test(err.message));
  assert.equal(requests.filter((r) => r.url.endsWith("/log")).length, 1);
  assert.equal(run.queue.length, 1);
  await run.finish();
  assert.equal(run.queue.length, 0);
});

test("gives up after maxAttempts, naming the status, never the key", async () => {
  reset();
  const client = new Client({ url: base, apiKey: KEY, maxAttempts: 2 });
  answers = [[503, { "retry-after": "0" }, { error: `busy ${KEY}` }], [503, { "retry-after": "0" }, { error: `busy ${KEY}` }]];
  await assert.rejects(client.request("POST", "/runs", {}), (err) => err.status === 503 && !err.message.includes(KEY));
  assert.equal(requests.length, 2);
  assert.ok(!JSON.stringify(client).includes(KEY));
});

test("plain http:// to another host is refused before anything is sent", () => {
  assert.throws(() => checkUrl("http://example.com:8080"), /refusing to send a key over plain http/);
  assert.equal(checkUrl("http://127.0.0.1:9/"), "http://127.0.0.1:9");
  assert.equal(checkUrl("https://lab.example/"), "https://lab.example");
  assert.throws(() => new Client({ url: base, apiKey: "" }), /no API key/);
});

test("Retry-After as seconds and as an HTTP date", () => {
  assert.equal(retryAfterMs("2"), 2000);
  assert.equal(retryAfterMs(undefined), undefined);
  const now = Date.parse("Wed, 21 Oct 2015 07:28:00 GMT");
  assert.equal(retryAfterMs("Wed, 21 Oct 2015 07:28:03 GMT", now), 3000);
});
