// The runs list's pages as the server answers them: GET /api/runs with an ETag, and the sort key of a column.

import { ApiError } from "./util.js";

/**
 * GET /api/runs with the ETag of the last answer: an unchanged listing answers 304 with no body and the
 * page keeps what it has (an idle page of 5,000 runs costs a few hundred bytes per poll, not megabytes).
 */
export async function fetchRuns(params, last) {
  const url = new URL("/api/runs", location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (Array.isArray(v)) v.filter(Boolean).forEach((x) => url.searchParams.append(k, x));
    else if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, v);
  }
  const key = url.search;
  const headers = { accept: "application/json" };
  if (last && last.key === key && last.etag) headers["if-none-match"] = last.etag;
  let resp;
  try {
    resp = await fetch(url, { headers, cache: "no-store" });
  } catch (err) {
    throw new ApiError(`cannot reach the tracker server (${err.message})`, 0);
  }
  if (resp.status === 304 && last) return { ...last, fresh: false };
  let body = null;
  try { body = await resp.json(); } catch { /* not JSON */ }
  if (!resp.ok) throw new ApiError(body && body.error ? body.error : `HTTP ${resp.status}`, resp.status);
  return { key, etag: resp.headers.get("etag"), data: body, fresh: true };
}

/** The server's sort key of a column (`-` first for descending): a field, config.KEY or metric.NAME.STAT. */
export function apiSort(key, desc) {
  let k = key;
  if (key.startsWith("config:")) k = `config.${key.slice(7)}`;
  else if (key.startsWith("metric:")) {
    const rest = key.slice(7).split(":");
    const stat = rest.pop();
    k = `metric.${rest.join(":")}.${stat}`;
  }
  return (desc ? "-" : "") + k;
}
