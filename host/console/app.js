// The console: signs in, then routes `#/…` to one view at a time. Every view calls the
// API as the signed-in user.

import { api, session, signOut } from './api.js';
import { auditPage } from './audit.js';
import { browsePage } from './browse.js';
import { managePage } from './manage.js';
import { mountsPage } from './mounts.js';
import { finishOidc, signInPage } from './signin.js';
import { tablePage, viewPage } from './table.js';
import { attempt, errorBox, show } from './ui.js';

const routes = [
  [/^#\/mounts$/, () => mountsPage()],
  [/^#\/browse$/, () => browsePage()],
  [/^#\/browse\/([^/]+)$/, (m) => browsePage(decode(m[1]))],
  [/^#\/table\/([^/]+)\/([^/]+)$/, (m) => tablePage(decode(m[1]), decodeURIComponent(m[2]))],
  [/^#\/view\/([^/]+)\/([^/]+)$/, (m) => viewPage(decode(m[1]), decodeURIComponent(m[2]))],
  [/^#\/manage$/, () => managePage()],
  [/^#\/audit$/, () => auditPage()],
];

/** A namespace from its place in a route: its levels, each encoded, joined by `%1F`. */
const decode = (part) => part.split('%1F').map(decodeURIComponent);

async function route() {
  if (!session.token) return signInPage(start);
  const hash = location.hash || '#/browse';
  for (const link of document.querySelectorAll('#nav a')) {
    if (hash.startsWith(link.getAttribute('href'))) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const found = routes.find(([pattern]) => pattern.test(hash));
  if (!found) return show('Not found', errorBox({ message: `nothing at ${hash}` }));
  await attempt(document.getElementById('main'), () => found[1](hash.match(found[0])));
}

/** Once a token is held: who it is, what the navigation offers, then the page asked for. */
async function start() {
  const main = document.getElementById('main');
  const who = await attempt(main, () => api('/management/v1/whoami'));
  if (!who) {
    signOut();
    return;
  }
  session.who = who;
  document.getElementById('who').textContent = `${who.name} (${who.tenant}, ${who.role}${who['server-admin'] ? ', server admin' : ''})`;
  document.getElementById('nav').hidden = false;
  document.getElementById('signout').hidden = false;
  document.getElementById('nav-audit').hidden = !(who['server-admin'] || who.role === 'admin');
  if (!location.hash) location.hash = '#/browse';
  else await route();
}

document.getElementById('signout').addEventListener('click', () => {
  signOut();
  document.getElementById('nav').hidden = true;
  document.getElementById('signout').hidden = true;
  document.getElementById('who').textContent = '';
  location.hash = '';
  signInPage(start);
});

window.addEventListener('hashchange', () => {
  if (session.who) route();
});

(async () => {
  const main = document.getElementById('main');
  const returned = await attempt(main, finishOidc);
  if (returned === undefined && !session.token) return; // the sign-in answer was refused: its error shows
  if (session.token) await start();
  else await signInPage(start);
})();
