// The REST and management API, called with the signed-in user's own token: the console
// has no other way in, so it sees exactly what the user may see.

const TOKEN = 'rustberg.token';

export const session = { token: sessionStorage.getItem(TOKEN), who: null };

export function signIn(token) {
  session.token = token;
  sessionStorage.setItem(TOKEN, token);
}

export function signOut() {
  session.token = null;
  session.who = null;
  sessionStorage.removeItem(TOKEN);
}

/** A refusal or failure, with the server's own error text. */
export class ApiError extends Error {
  constructor(status, type, message) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

/** JSON, with every integer beyond 2^53 kept exact as a BigInt made from its own digits:
 * snapshot ids are 64-bit, and a Number would round them to ids that do not exist. */
export function parseExact(text) {
  return JSON.parse(text, (key, value, context) => (
    typeof value === 'number' && !Number.isSafeInteger(value) && /^-?\d+$/.test(context?.source ?? '')
      ? BigInt(context.source)
      : value));
}

/** JSON text of a value that may hold such a BigInt (written as its digits). */
export const toJson = (value) => JSON.stringify(value, (key, v) => (typeof v === 'bigint' ? v.toString() : v));

/** Calls `path` on this server; the JSON answer, or an ApiError saying why not. */
export async function api(path, { method = 'GET', body } = {}) {
  const headers = { Authorization: `Bearer ${session.token}` };
  let payload;
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    payload = toJson(body);
  }
  const response = await fetch(path, { method, headers, body: payload });
  const text = await response.text();
  let data = null;
  try {
    data = text ? parseExact(text) : null;
  } catch {
    data = text;
  }
  if (!response.ok) {
    const error = data && data.error;
    const message = error ? error.message : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, error ? error.type : 'Error', message);
  }
  return data;
}

/** A path under the catalog prefix. */
export const catalog = (path) => `/v1/catalog${path}`;

/** A namespace as a path parameter: its levels joined by the unit separator. */
export const ns = (levels) => levels.map(encodeURIComponent).join('%1F');

/** A namespace as people write it. */
export const dotted = (levels) => levels.join('.');

/** One page of a listing: its items and the token of the next. (A first request needs an
 * empty `pageToken`: without one, the protocol answers every item at once.) */
export async function page(path, key, pageToken, pageSize = 100) {
  const sep = path.includes('?') ? '&' : '?';
  const body = await api(`${path}${sep}pageSize=${pageSize}&pageToken=${encodeURIComponent(pageToken || '')}`);
  return { items: body[key] || [], next: body['next-page-token'] || null };
}
