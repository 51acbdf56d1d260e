// Types of the tracker server's JavaScript client (index.js).

/** The API's root on the server. */
export const API: "/api/v1";

/** An error of the server's API (or of reaching it). */
export class TrackerError extends Error {
  /** The HTTP status; undefined when there was no answer. */
  status?: number;
  /** The answer's JSON ({"error": "..."} and its fields). */
  body?: Record<string, unknown>;
  constructor(message: string, status?: number, body?: Record<string, unknown>);
}

/** A metric's value (NaN and infinities become null, as JSON.stringify writes them). */
export type MetricValue = number | boolean | null;

export interface ClientOptions {
  /** The server: https://host[:port] (http:// only to a loopback address). Default: TRACKER_URL. */
  url?: string;
  /** The API key (trk_<id>_<secret>). Default: TRACKER_API_KEY. */
  apiKey?: string;
  /** Tries of a request before giving up (default 8). */
  maxAttempts?: number;
  /** Each attempt's deadline in milliseconds (default 30000). */
  timeoutMs?: number;
  /** The fetch to use (default: globalThis.fetch). */
  fetch?: typeof fetch;
}

export interface InitOptions extends ClientOptions {
  project?: string;
  name?: string;
  config?: Record<string, unknown>;
  tags?: string[];
  group?: string;
  jobType?: string;
  /** The run's id (default: 12 random hex digits, made here so that a retried start finds its own run). */
  id?: string;
  /** Records per request; a full batch is sent at once (default 100). */
  batchSize?: number;
  /** Milliseconds after which queued records are sent anyway (default 1000; 0: only by count or flush()). */
  flushInterval?: number;
  /** Called with the error of a background flush that failed after its retries (default: console.warn). */
  onError?: (error: TrackerError) => void;
}

/** The server URL without its trailing slash; throws for plain http:// to another host. */
export function checkUrl(url: string): string;
/** Milliseconds a Retry-After header asks for (seconds or an HTTP date), or undefined. */
export function retryAfterMs(value: string | null | undefined, now?: number): number | undefined;
/** A fresh random run id: 12 lowercase hex digits. */
export function newRunId(): string;
/** The backoff before the next attempt (exponential with jitter), in milliseconds. */
export function backoffMs(attempt: number): number;

/** Requests to one server with one key, retried on network errors, 429, 502, 503 and 504. */
export class Client {
  readonly url: string;
  readonly maxAttempts: number;
  readonly timeoutMs: number;
  /** The key's public id (trk_<id>), never its secret. */
  readonly keyId: string;
  constructor(options?: ClientOptions);
  /** `alreadyDone`: on a retry after a lost answer, a status meaning the first attempt got through. */
  request(method: string, path: string, doc?: unknown,
    options?: { alreadyDone?: (status: number) => Record<string, unknown> | undefined }): Promise<any>;
}

/** One run on the server. */
export class Run {
  readonly client: Client;
  readonly id: string;
  readonly batchSize: number;
  readonly flushInterval: number;
  /** Records not sent yet, in order. */
  readonly queue: Array<{ step: number; metrics: Record<string, MetricValue> }>;
  /** Records the server has taken. */
  readonly logged: number;
  readonly finished: boolean;
  /** Queue one record of metrics; sent in batches. */
  log(metrics: Record<string, MetricValue>, options?: { step?: number }): void;
  /** Send everything queued; resolves when the server has it. */
  flush(): Promise<void>;
  /** Flush, then end the run. */
  finish(options?: { status?: "finished" | "failed" | "stopped"; error?: string }): Promise<void>;
}

/** Start a run on the server (POST /api/v1/runs). */
export function init(options: InitOptions): Promise<Run>;
