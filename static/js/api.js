// The scripts' one way to call the studio over HTTP. A request either gets a
// 2xx answer or throws an ApiError: the API's error envelope
// {"error": {"code", "message", "details"}} (web/errors.go) read into one
// type, an answer without an envelope (an HTML fragment, a proxy's page) as
// its status, and no answer at all as status 0.

export class ApiError extends Error {
  constructor(status, code, message, details, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status; // the HTTP status; 0: the studio did not answer
    this.code = code; // the envelope's code ("version_conflict", …); '' without one
    this.details = details;
    this.body = body; // the answer's text: an HTML route's error fragment
  }
}

const JSON_TYPE = 'application/json';

// request sends one request and returns its Response when the status is
// 2xx. opts.body is sent as JSON (an object is encoded, a string is sent as
// it is); opts.accept is 'json' (the default) or 'html'; opts.headers adds
// headers (If-Match).
export async function request(method, path, opts = {}) {
  const headers = { Accept: opts.accept === 'html' ? 'text/html' : JSON_TYPE, ...(opts.headers || {}) };
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = JSON_TYPE;
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, { method, headers, body });
  } catch (e) {
    throw new ApiError(0, 'unreachable', 'The studio did not answer: ' + e.message);
  }
  if (!res.ok) throw await errorOf(res);
  return res;
}

async function errorOf(res) {
  const text = await res.text().catch(() => '');
  let env = null;
  try { env = JSON.parse(text).error; } catch { /* not JSON: no envelope */ }
  if (env && typeof env === 'object') return new ApiError(res.status, env.code || '', env.message || 'The studio answered ' + res.status, env.details, text);
  return new ApiError(res.status, '', 'The studio answered ' + res.status, undefined, text);
}

// json sends a request and reads its JSON answer (null for 204).
export async function json(method, path, body) {
  const res = await request(method, path, { body });
  return res.status === 204 ? null : res.json();
}

export const get = (path) => json('GET', path);
export const post = (path, body) => json('POST', path, body);

// html reads a route's HTML fragment: { html, headers }.
export async function html(method, path, body) {
  const res = await request(method, path, { body, accept: 'html' });
  return { html: await res.text(), headers: res.headers };
}
