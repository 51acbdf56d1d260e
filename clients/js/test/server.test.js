// End to end against a real `tracker server`: TRACKER_URL and TRACKER_API_KEY (a write key) in the environment.
// tests/remote/test_js_client.py starts the server and runs these; without the variables they are skipped.
import assert from "node:assert/strict";
import { test } from "node:test";

import { Client, init, TrackerError } from "../index.js";

const url = process.env.TRACKER_URL;
const apiKey = process.env.TRACKER_API_KEY;
const skip = !url || !apiKey ? "TRACKER_URL and TRACKER_API_KEY are not set (no server to test against)" : false;

async function records(client, runId) {
  const resp = await fetch(`${client.url}/api/v1/runs/${runId}/records?schema=metrics`, {
    headers: { authorization: `Bearer ${apiKey}` },
  });
  assert.equal(resp.status, 200);
  const lines = (await resp.text()).trim().split("\n").map((line) => JSON.parse(line));
  assert.deepEqual(lines.at(-1), { end: lines.length - 1 });
  return lines.slice(0, -1);
}

test("a run logged in batches arrives whole, in order, and finished", { skip }, async () => {
  const run = await init({ url, apiKey, project: "js", name: "batches", config: { lr: 0.5, depth: 2 }, tags: ["node"],
    batchSize: 7, flushInterval: 20 });
  for (let step = 0; step < 25; step++) run.log({ loss: 1 / (step + 1), acc: step / 25 }, { step });
  await run.finish();
  assert.equal(run.logged, 25);
  const client = new Client({ url, apiKey });
  const info = await client.request("GET", `/runs/${run.id}`);
  assert.equal(info.info.status, "finished");
  assert.equal(info.info.name, "batches");
  assert.equal(info.info.project, "js");
  assert.deepEqual(info.info.config, { lr: 0.5, depth: 2 });
  assert.deepEqual(info.info.tags, ["node"]);
  assert.equal(info.metrics.loss.count, 25);
  const got = await records(client, run.id);
  assert.deepEqual(got.map((r) => r.step), [...Array(25).keys()]);
  assert.deepEqual(got.map((r) => r.data.loss), [...Array(25).keys()].map((s) => 1 / (s + 1)));
});

test("a failed run says so, with its error", { skip }, async () => {
  const run = await init({ url, apiKey, project: "js", name: "fails", flushInterval: 0 });
  run.log({ loss: 3 });
  await run.finish({ status: "failed", error: "diverged" });
  const info = await new Client({ url, apiKey }).request("GET", `/runs/${run.id}`);
  assert.equal(info.info.status, "failed");
});

test("a record the server refuses is a 400 naming it, and nothing of its batch is written", { skip }, async () => {
  const run = await init({ url, apiKey, project: "js", name: "refused", flushInterval: 0 });
  run.log({ loss: 1 }, { step: 0 });
  run.log({ loss: { nested: "no" } }, { step: 1 });
  await assert.rejects(run.flush(), (err) => err instanceof TrackerError && err.status === 400 && /record 1/.test(err.message));
  const client = new Client({ url, apiKey });
  assert.deepEqual(await records(client, run.id), []);
});

test("a wrong key is refused with 401, not retried", { skip }, async () => {
  const started = Date.now();
  await assert.rejects(init({ url, apiKey: "trk_nope_0000000000000000000000000000000000000000", project: "js" }),
    (err) => err instanceof TrackerError && err.status === 401);
  assert.ok(Date.now() - started < 10000, "not retried (the retries alone would wait 12.8 s at least)");
});
