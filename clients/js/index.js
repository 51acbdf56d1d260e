// A dependency-free client for a tracker server's logging API (/api/v1/), on Node 18+'s fetch.
//
//   import { init } from "tracker-client";
//   const run = await init({ url: "https://lab:8443", apiKey: process.env.TRACKER_API_KEY, project: "demo" });
//   run.log({ loss: 0.5 }, { step: 1 });
//   await run.finish();
//
// log() only queues: records go to the server in batches (`batchSize` records, or every
// `flushInterval` ms), one request at a time and in order. A request that fails on the way
// (a network error, 429, 502, 503, 504) is sent again after the server's Retry-After, else an
// exponential backoff with jitter; other errors (400, 401, 403, 413) are not retried. A batch that
// could not be sent stays queued, in order, for the next flush; finish() flushes everything first.

/** The API's root on the server. */
export const API = "/api/v1";
const RETRIED = new Set([429, 502, 503, 504]);
// Node's codes of a certificate it does not trust (the undici fetch's cause.code).
const CERT_ERROR = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS/;
const FIRST_BACKOFF_MS = 250;
const MAX_BACKOFF_MS = 10_000;
const MAX_RETRY_AFTER_MS = 120_000;

/** An error of the server's API: `status` is the HTTP status (undefined: no answer), `body` its JSON. */
export class TrackerError extends Error {
  constructor(message, status, body) {
    super(message);
    this.name = "TrackerError";
    this.status = status;
    this.body = body;
  }
}

function isLoopback(host) {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h.endsWith(".localhost") || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/** The server URL without a trailing slash; plain http:// only to this machine (the key would travel in clear). */
export function checkUrl(url) {
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new TrackerError(`tracker: ${JSON.stringify(String(url))} is not a URL (expected https://host[:port])`);
  }
  if (parsed.protocol !== "https:" && parsed.protocol !== "http:") {
    throw new TrackerError(`tracker: expected an https:// URL, given ${parsed.protocol}//${parsed.host}`);
  }
  if (parsed.protocol === "http:" && !isLoopback(parsed.hostname)) {
    throw new TrackerError(`tracker: refusing to send a key over plain http:// to ${parsed.host}: use https://`);
  }
  return `${parsed.origin}${parsed.pathname.replace(/\/+$/, "")}`;
}

/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or undefined. */
export function retryAfterMs(value, now = Date.now()) {
  if (value == null || value === "") return undefined;
  const text = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  const when = Date.parse(text);
  if (Number.isNaN(when)) return undefined;
  return Math.min(Math.max(0, when - now), MAX_RETRY_AFTER_MS);
}

/** The wait before attempt `attempt + 1` (0-based) without a Retry-After: exponential, with full jitter. */
export function backoffMs(attempt) {
  const top = Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** attempt);
  return top / 2 + Math.random() * (top / 2);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A fresh random run id: 12 lowercase hex digits (as tracker's own). */
export function newRunId() {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** Requests to one server with one key, retried as the header of this module says. */
export class Client {
  /**
   * @param {object} options
   * @param {string} options.url the server (https://, or http:// to a loopback address)
   * @param {string} [options.apiKey] the key (default: TRACKER_API_KEY)
   * @param {number} [options.maxAttempts] tries of a request before giving up (default 8)
   * @param {number} [options.timeoutMs] each attempt's deadline (default 30000)
   * @param {typeof fetch} [options.fetch] the fetch to use (default: globalThis.fetch)
   */
  constructor({ url, apiKey, maxAttempts = 8, timeoutMs = 30_000, fetch: fetchImpl } = {}) {
    this.url = checkUrl(url ?? process.env.TRACKER_URL);
    const key = apiKey ?? process.env.TRACKER_API_KEY;
    if (!key) throw new TrackerError("tracker: no API key: pass apiKey or set TRACKER_API_KEY");
    Object.defineProperty(this, "_key", { value: key, enumerable: false }); // never printed with the client
    this.maxAttempts = Math.max(1, maxAttempts);
    this.timeoutMs = timeoutMs;
    this._fetch = fetchImpl ?? globalThis.fetch;
    if (typeof this._fetch !== "function") throw new TrackerError("tracker: this Node has no fetch (Node 18+ needed)");
  }

  /** The key's public id (trk_<id>), never its secret. */
  get keyId() {
    return this._key.split("_").slice(0, 2).join("_");
  }

  /**
   * POST (or another method) `doc` as JSON to `path` under /api/v1; the answer's JSON.
   * @param {{alreadyDone?: (status: number) => object|undefined}} [options] on a retry, a status that means the
   *   first attempt got through (its answer was lost): the answer to give instead of the error
   */
  async request(method, path, doc, { alreadyDone } = {}) {
    const target = `${this.url}${API}${path}`;
    let lastError;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      let wait;
      try {
        const resp = await this._fetch(target, {
          method,
          headers: { authorization: `Bearer ${this._key}`, "content-type": "application/json", accept: "application/json" },
          body: doc === undefined ? undefined : JSON.stringify(doc),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
        const text = await resp.text();
        let body = {};
        try {
          body = text ? JSON.parse(text) : {};
        } catch {
          body = {};
        }
        if (resp.ok) return body;
        const done = attempt > 0 && lastError?.status === undefined ? alreadyDone?.(resp.status) : undefined;
        if (done !== undefined) return done;
        const said = typeof body.error === "string" ? body.error : resp.statusText;
        const error = new TrackerError(this._scrub(`tracker: ${method} ${this.url}${API}${path}: ${resp.status} ${said}`),
          resp.status, body);
        if (!RETRIED.has(resp.status)) throw error;
        lastError = error;
        wait = retryAfterMs(resp.headers.get("retry-after"));
      } catch (exc) {
        if (exc instanceof TrackerError) throw exc;
        const why = exc?.cause?.code ?? exc?.name ?? "error";
        if (CERT_ERROR.test(String(why))) { // never retried: the certificate will not change
          throw new TrackerError(this._scrub(`tracker: ${method} ${this.url}${API}${path}: the server's certificate `
            + `is not trusted (${why}); give the lab's CA with NODE_EXTRA_CA_CERTS=ca.pem`));
        }
        lastError = new TrackerError(this._scrub(`tracker: ${method} ${this.url}${API}${path}: ${why}`));
      }
      if (attempt + 1 < this.maxAttempts) await sleep(wait ?? backoffMs(attempt));
    }
    throw lastError;
  }

  _scrub(text) {
    return text.split(this._key).join("***");
  }
}

/** One run on the server: log() queues, flush() sends, finish() ends it. */
export class Run {
  constructor(client, id, { batchSize = 100, flushInterval = 1000, onError } = {}) {
    this.client = client;
    this.id = id;
    this.batchSize = Math.max(1, batchSize);
    this.flushInterval = flushInterval;
    this.onError = onError ?? ((error) => console.warn(error.message));
    this.queue = [];
    this.finished = false;
    this.logged = 0;
    this._sending = Promise.resolve();
    this._timer = undefined;
    this._step = 0;
  }

  /**
   * Queue one record of metrics (numbers, booleans or null; NaN and infinities become null in JSON).
   * @param {Record<string, number|string|boolean|null>} metrics
   * @param {{step?: number}} [options] the step (default: one more than the last)
   */
  log(metrics, { step } = {}) {
    if (this.finished) throw new TrackerError(`tracker: run ${this.id} is finished; log() needs a new run`);
    if (metrics === null || typeof metrics !== "object" || Array.isArray(metrics)) {
      throw new TrackerError(`tracker: log() expects an object of metrics, given ${Array.isArray(metrics) ? "an array" : typeof metrics}`);
    }
    if (step !== undefined && !Number.isSafeInteger(step)) {
      throw new TrackerError(`tracker: step expects a whole number, given ${JSON.stringify(step)}`);
    }
    const at = step ?? this._step;
    this._step = at + 1;
    this.queue.push({ step: at, metrics: { ...metrics } });
    if (this.queue.length >= this.batchSize) {
      this.flush().catch(this.onError);
    } else if (this._timer === undefined && this.flushInterval > 0) {
      this._timer = setTimeout(() => {
        this._timer = undefined;
        this.flush().catch(this.onError);
      }, this.flushInterval);
      this._timer.unref?.();
    }
  }

  /** Send everything queued, in batches of `batchSize`, in order; resolves when the server has it all. */
  flush() {
    if (this._timer !== undefined) {
      clearTimeout(this._timer);
      this._timer = undefined;
    }
    const next = this._sending.catch(() => {}).then(() => this._drain());
    this._sending = next;
    return next;
  }

  async _drain() {
    while (this.queue.length) {
      const batch = this.queue.slice(0, this.batchSize);
      const answer = await this.client.request("POST", `/runs/${encodeURIComponent(this.id)}/log`, { batch });
      this.queue.splice(0, batch.length); // removed only once the server has it: a failed batch stays first
      this.logged += typeof answer.logged === "number" ? answer.logged : batch.length;
    }
  }

  /**
   * Flush, then end the run.
   * @param {{status?: "finished"|"failed"|"stopped", error?: string}} [options]
   */
  async finish({ status = "finished", error } = {}) {
    if (this.finished) return;
    await this.flush();
    const doc = { status };
    if (error !== undefined) doc.error = String(error);
    await this.client.request("POST", `/runs/${encodeURIComponent(this.id)}/finish`, doc);
    this.finished = true;
  }
}

/**
 * Start a run on the server.
 * @param {object} options see index.d.ts
 * @returns {Promise<Run>}
 */
export async function init({ url, apiKey, project, name, config, tags, group, jobType, id, batchSize, flushInterval,
  onError, maxAttempts, timeoutMs, fetch: fetchImpl } = {}) {
  const client = new Client({ url, apiKey, maxAttempts, timeoutMs, fetch: fetchImpl });
  // The run's id is made here (12 hex digits, as tracker makes them), so that a start sent again after a lost
  // answer finds its own run (409: it exists) instead of starting a second one.
  const runId = id ?? newRunId();
  const doc = { project, name, config: config ?? {}, tags: tags ?? [], id: runId };
  if (group !== undefined) doc.group = group;
  if (jobType !== undefined) doc.job_type = jobType;
  const answer = await client.request("POST", "/runs", doc,
    { alreadyDone: (status) => (status === 409 && id === undefined ? { id: runId } : undefined) });
  if (typeof answer.id !== "string") throw new TrackerError(`tracker: the server did not say the new run's id`);
  return new Run(client, answer.id, { batchSize, flushInterval, onError });
}
