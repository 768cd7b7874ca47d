// Signing in: with a principal's client credentials (the server's token endpoint), or
// with OpenID Connect (authorization code and PKCE) where the server names an issuer
// and a client for the console. Either way the console holds one bearer token.

import { ApiError, signIn } from './api.js';
import { attempt, field, h, show } from './ui.js';

const PENDING = 'rustberg.oidc';

const base64url = (bytes) =>
  btoa(String.fromCharCode(...new Uint8Array(bytes))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
const random = () => base64url(crypto.getRandomValues(new Uint8Array(32)));
const redirectUri = () => `${location.origin}/ui/`;

/** An OAuth refusal in plain words: what happened and what to do. */
function oauthRefusal(status, body) {
  const plain = {
    invalid_client: 'Wrong client id or secret. Check both (the secret was shown once, when the principal was made); an admin can make a new principal under Manage.',
    invalid_grant: 'This sign-in expired or was already used. Sign in again.',
    invalid_request: 'The sign-in request was incomplete. Fill in both fields and try again.',
    unsupported_grant_type: 'This server does not sign in that way. Use a client id and secret.',
  }[body.error];
  const detail = body.error_description ? ` (${body.error_description})` : '';
  return new ApiError(status, 'Sign-in refused', plain ? `${plain}${detail}` : `the server answered ${status}${detail}`);
}

async function clientCredentials(id, secret) {
  const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: id, client_secret: secret, scope: 'catalog' });
  const response = await fetch('/v1/oauth/tokens', { method: 'POST', body: form });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw oauthRefusal(response.status, body);
  signIn(body.access_token);
}

async function discover(issuer) {
  const response = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
  if (!response.ok) throw new ApiError(response.status, 'Error', `the issuer ${issuer} has no discovery document`);
  return response.json();
}

/** Sends the browser to the issuer's sign-in, keeping the PKCE verifier for the return. */
async function startOidc(oidc) {
  const discovery = await discover(oidc.issuer);
  const verifier = random();
  const state = random();
  const challenge = base64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier)));
  sessionStorage.setItem(PENDING, JSON.stringify({ verifier, state, token: discovery.token_endpoint, client: oidc['client-id'] }));
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: oidc['client-id'],
    redirect_uri: redirectUri(),
    scope: 'openid',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  location.assign(`${discovery.authorization_endpoint}?${query}`);
}

/** Back from the issuer: trades the code for a token. True when this was a return. */
export async function finishOidc() {
  const params = new URLSearchParams(location.search);
  if (!params.has('code') && !params.has('error')) return false;
  const pending = JSON.parse(sessionStorage.getItem(PENDING) || 'null');
  sessionStorage.removeItem(PENDING);
  history.replaceState(null, '', '/ui/#/browse');
  if (params.has('error')) throw new ApiError(401, params.get('error'), params.get('error_description') || 'sign-in refused');
  if (!pending || pending.state !== params.get('state')) throw new ApiError(400, 'Error', 'the sign-in answer does not match the request');
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: params.get('code'),
    redirect_uri: redirectUri(),
    client_id: pending.client,
    code_verifier: pending.verifier,
  });
  const response = await fetch(pending.token, { method: 'POST', body: form });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw oauthRefusal(response.status, body);
  // A JWT access token when the issuer gives one, else the ID token (its audience is the console).
  const jwt = (t) => typeof t === 'string' && t.split('.').length === 3;
  signIn(jwt(body.access_token) ? body.access_token : body.id_token);
  return true;
}

/** The sign-in page; `done` runs once a token is held. */
export async function signInPage(done) {
  const config = await fetch('/ui/config.json').then((r) => r.json());
  const id = h('input', { name: 'client-id', autocomplete: 'username', required: true });
  const secret = h('input', { name: 'client-secret', type: 'password', autocomplete: 'current-password', required: true });
  const form = h('form', { 'aria-labelledby': 'credentials-heading' },
    h('h2', { id: 'credentials-heading' }, 'Client credentials'),
    field('Client id', id),
    field('Client secret', secret),
    h('button', { type: 'submit' }, 'Sign in'));
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const ok = await attempt(form, async () => {
      await clientCredentials(id.value.trim(), secret.value);
      return true;
    });
    if (ok) done();
  });
  const parts = [form];
  if (config.oidc) {
    const oidc = h('section', { 'aria-labelledby': 'oidc-heading' },
      h('h2', { id: 'oidc-heading' }, 'Single sign-on'),
      h('button', { type: 'button', onclick: () => attempt(oidc, () => startOidc(config.oidc)) },
        `Sign in with ${config.oidc.issuer}`));
    parts.push(oidc);
  }
  show('Sign in', ...parts);
}
