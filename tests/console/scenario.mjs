// The console in Debian's chromium, driven by Playwright: sign in with OpenID Connect,
// browse into a table in a mount and see its snapshot chart, create a namespace and
// grant a reader on it, sign in as that reader and see only what the grant allows.
// Fails on any console error or failed request but the one refusal it provokes, and
// on any control without a label. Screenshots go to $SCREENSHOTS.
//
// Env: RUSTBERG_URL, IDP_URL, OIDC_LOGIN, SCREENSHOTS, CHROMIUM (default /usr/bin/chromium).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { gzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';

const base = process.env.RUSTBERG_URL;
const shots = process.env.SCREENSHOTS;
const login = process.env.OIDC_LOGIN;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync'],
});
const desktop = { width: 1280, height: 800 };
const phone = { width: 390, height: 844 };
const context = await browser.newContext({ viewport: desktop, locale: 'en-US' });
await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
const page = await context.newPage();

// Everything that goes wrong in the console (not on the issuer's own sign-in pages), but
// what the scenario expects to be refused.
const problems = [];
let expected = null; // { method, path, status } of the one refusal provoked
const refused = [];
const ours = (url) => url.startsWith(`${base}/`);
page.on('console', (message) => {
  if (message.type() !== 'error' || !ours(page.url())) return;
  if (expected && message.text().includes(`status of ${expected.status}`)) return;
  problems.push(`console: ${message.text()}`);
});
page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
page.on('requestfailed', (request) => {
  if (ours(request.frame().url())) problems.push(`failed: ${request.method()} ${request.url()} ${request.failure()?.errorText}`);
});
const assets = new Set(); // what the console's page is made of
page.on('response', (response) => {
  const path = new URL(response.url()).pathname;
  if (response.url().startsWith(`${base}/ui/`) && path !== '/ui/config.json') assets.add(path);
  if (response.status() < 400 || !ours(response.request().frame().url())) return;
  const url = new URL(response.url());
  const request = response.request();
  if (expected && request.method() === expected.method && url.pathname === expected.path && response.status() === expected.status) {
    refused.push(url.pathname);
    return;
  }
  problems.push(`status ${response.status()}: ${request.method()} ${response.url()}`);
});

/** Every form control and button has a name a screen reader can say. */
async function everyControlLabelled(where) {
  const unnamed = await page.evaluate(() => {
    const named = (el) => (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby')
      || (el.tagName === 'BUTTON' && el.textContent.trim());
    return [...document.querySelectorAll('input, select, textarea, button')]
      .filter((el) => !el.closest('[hidden]') && !named(el))
      .map((el) => el.outerHTML.slice(0, 120));
  });
  assert.deepEqual(unnamed, [], `controls without a label on ${where}`);
}

// Dialogs (confirmations): each message kept, answered from `answers` in order (no
// answer left: dismissed).
const dialogs = [];
let answers = [];
page.on('dialog', (dialog) => {
  dialogs.push(dialog.message());
  if (answers.shift()) dialog.accept();
  else dialog.dismiss();
});

const shot = (name) => page.screenshot({ path: `${shots}/console-${name}.png`, fullPage: true });

/** axe-core's rules on the page as it stands: no serious or critical violation. (Run
 * through the DevTools protocol, which the console's Content-Security-Policy does not
 * govern, so the page keeps its policy.) */
const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
async function accessible(where) {
  if (!(await page.evaluate(() => typeof window.axe !== 'undefined'))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { violations } = await window.axe.run(document, { resultTypes: ['violations'] });
    return violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  assert.deepEqual(violations, [], `serious or critical accessibility violations on ${where}`);
}

/** The page fits the window, at a desktop's size and at a phone's: nothing scrolls
 * sideways. A screenshot of each. */
async function fits(name) {
  await accessible(name);
  for (const [size, suffix] of [[desktop, ''], [phone, '-phone']]) {
    await page.setViewportSize(size);
    const measured = await page.evaluate(() => {
      const width = document.documentElement.clientWidth;
      const wide = [...document.querySelectorAll('body *')]
        .filter((el) => el.getBoundingClientRect().right > width + 0.5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className} ${(el.textContent || '').slice(0, 40)}`);
      return { scroll: document.documentElement.scrollWidth, width, wide: wide.slice(-3) };
    });
    assert.ok(measured.scroll <= measured.width,
      `${name} at ${size.width}×${size.height} is ${measured.scroll - measured.width} px too wide: ${JSON.stringify(measured.wide)}`);
    await shot(`${name}${suffix}`);
  }
  await page.setViewportSize(desktop);
}

try {
  // 1. Sign in with OpenID Connect (authorization code and PKCE) at the issuer's own page.
  await page.goto(`${base}/ui/`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await everyControlLabelled('sign-in');
  await fits('1-sign-in');
  await page.getByRole('button', { name: /Sign in with/ }).click();
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('any');
  await page.locator('button[type="submit"]').click();
  await page.getByRole('button', { name: /continue/i }).click(); // the issuer's consent
  await page.waitForURL(`${base}/ui/#/browse`);
  await page.locator('#who').getByText(login).waitFor();

  // The tree's first page, timed from a fresh load of the page.
  const started = Date.now();
  await page.goto(`${base}/ui/#/browse`);
  await page.reload();
  await page.locator('ul.tree > li').first().waitFor();
  const firstTree = Date.now() - started;
  console.log(`MEASURE tree-first-shown-ms ${firstTree}`);
  assert.equal(await page.locator('ul.tree > li').count(), 100, 'one page of 100 names, not everything');
  await everyControlLabelled('browse');
  await fits('1b-browse');

  // 2. Into a table inside the mount `prod`, by keyboard: focus each level and press Enter.
  const prod = page.locator('ul.tree > li[data-name="prod"] > button');
  await prod.focus();
  await page.keyboard.press('Enter');
  const analytics = page.locator('li[data-name="analytics"] > button');
  await analytics.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('link', { name: 'events' }).focus();
  await page.keyboard.press('Enter');
  await page.getByRole('heading', { name: 'Table prod.analytics.events' }).waitFor();
  const bars = await page.locator('svg.chart rect.records').count();
  assert.equal(bars, Number(process.env.SNAPSHOTS), 'one bar per snapshot');
  assert.match(await page.locator('svg.chart').getAttribute('aria-label'), /Records and data files added by each of/);
  // Each bar carries its value, and says it with the snapshot's exact id on hover.
  const values = await page.locator('svg.chart text.value').allTextContents();
  assert.equal(values.length, 2 * Number(process.env.SNAPSHOTS), 'a value on every bar');
  assert.ok(values.includes('12,000') && values.includes('12'), values.join(' '));
  assert.equal(await page.locator('svg.chart rect.records title').last().textContent(), `snapshot ${process.env.MAIN_SNAPSHOT_ID}: 12,000 records`);
  // No label overlaps a bar.
  const overlaps = await page.evaluate(() => {
    const boxes = (selector) => [...document.querySelectorAll(selector)].map((el) => el.getBoundingClientRect());
    const meet = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
    const bars = boxes('svg.chart rect');
    return boxes('svg.chart text.label').filter((l) => bars.some((b) => b.height > 0 && meet(l, b))).length;
  });
  assert.equal(overlaps, 0, 'a row label overlaps a bar');
  await page.getByRole('cell', { name: 'nested.inner' }).waitFor(); // a nested field
  await page.getByText('list<long>').waitFor();
  await page.getByRole('cell', { name: 'v1' }).waitFor(); // a tag
  // 64-bit snapshot ids exactly as the REST API gives them (above 2^53: no rounding).
  // An id standing alone: no digit before or after it (a rounded id would differ in them).
  const exactly = (id) => new RegExp(`(^|\\D)${id}(\\D|$)`);
  const refRow = (name) => page.getByRole('row').filter({ has: page.getByRole('cell', { name, exact: true }) });
  assert.match(await refRow('main').innerText(), exactly(process.env.MAIN_SNAPSHOT_ID), 'main names its exact snapshot');
  assert.match(await refRow('v1').innerText(), exactly(process.env.TAG_SNAPSHOT_ID), 'the tag names its exact snapshot');
  await page.locator('td code', { hasText: process.env.MAIN_SNAPSHOT_ID }).nth(1).waitFor(); // in the history
  // A copy button copies the id exactly.
  await page.getByRole('button', { name: `Copy snapshot id ${process.env.MAIN_SNAPSHOT_ID}` }).first().click();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), process.env.MAIN_SNAPSHOT_ID);
  // How to query it, naming this server and this table.
  assert.equal(await page.locator('figure.query').count(), 3, 'Spark SQL, PyIceberg and DuckDB');
  const duckdb = await page.locator('figure.query', { hasText: 'DuckDB' }).locator('pre').innerText();
  assert.ok(duckdb.includes(`ENDPOINT '${base}'`) && duckdb.includes('rustberg."prod.analytics"."events"'), duckdb);
  const spark = await page.locator('figure.query', { hasText: 'Spark SQL' }).locator('pre').innerText();
  assert.ok(spark.includes(`uri=${base}`) && spark.includes('FROM rustberg.prod.analytics.events'), spark);
  await page.getByRole('cell', { name: 'day' }).first().waitFor(); // the partition transform
  await everyControlLabelled('table');
  await fits('2-table');

  // A table PyIceberg wrote: its snapshot id, above 2^53, exactly.
  await page.goto(`${base}/ui/#/table/prod%1Fanalytics/written`);
  await page.getByRole('heading', { name: 'Table prod.analytics.written' }).waitFor();
  assert.match(await refRow('main').innerText(), exactly(process.env.PYICEBERG_SNAPSHOT_ID), 'PyIceberg\'s snapshot id exactly');
  await page.goBack();
  await page.getByRole('heading', { name: 'Table prod.analytics.events' }).waitFor();

  // Back up the tree by the breadcrumbs: `analytics` opens prod.analytics above the tree.
  const crumbs = page.getByRole('navigation', { name: 'Breadcrumb' });
  assert.deepEqual(await crumbs.getByRole('link').allInnerTexts(), ['Browse', 'prod', 'analytics']);
  await crumbs.getByRole('link', { name: 'analytics' }).click();
  const opened = page.getByRole('list', { name: 'Opened namespace' });
  await opened.getByRole('link', { name: 'events' }).waitFor();
  // A mount is marked with its backend and health.
  assert.match(await page.locator('ul.tree > li[data-name="prod"]').innerText(), /mount · native · reachable/);
  // A namespace made and dropped in place.
  await opened.getByLabel('New namespace in prod.analytics').fill('staging');
  await opened.getByRole('button', { name: 'Create here' }).first().click();
  const staging = opened.locator('li[data-name="staging"]');
  await staging.locator('button.ns').click();
  answers = [true];
  await staging.getByRole('button', { name: 'Drop prod.analytics.staging' }).click();
  await staging.waitFor({ state: 'detached' });
  await fits('1c-opened');

  // The view's SQL.
  await page.goto(`${base}/ui/#/browse`);
  await page.locator('ul.tree > li[data-name="prod"] > button').click();
  await page.locator('li[data-name="analytics"] > button').click();
  await page.getByRole('link', { name: 'recent' }).click();
  await page.getByText('SELECT id FROM prod.analytics.events').waitFor();
  await fits('2b-view');

  // Mounts: backend, component, health and the latency the metrics show.
  await page.getByRole('link', { name: 'Mounts' }).click();
  await page.getByRole('cell', { name: 'prod', exact: true }).waitFor();
  const prodRow = page.getByRole('row').filter({ has: page.getByRole('cell', { name: 'prod', exact: true }) });
  assert.match(await prodRow.innerText(), /native[\s\S]*contract 0\.2\.\d[\s\S]*kv[\s\S]*acme[\s\S]*reachable[\s\S]*ms/);
  await fits('3-mounts');

  // 3. Create a namespace, a tenant and a reader in it (its secret shown once), and grant
  // the reader read on the namespace.
  await page.getByRole('link', { name: 'Manage' }).click();
  await page.getByLabel('New namespace').fill('shared');
  await page.getByLabel('New namespace').press('Enter'); // by keyboard
  await page.getByText('Created shared').waitFor();
  assert.equal(await page.getByLabel('New namespace').inputValue(), '', 'the form resets after a success');
  await page.getByLabel('New tenant').fill('guests');
  await page.getByLabel('New tenant').press('Enter');
  await page.getByRole('cell', { name: 'guests', exact: true }).waitFor();
  // Destructive actions ask first; taking away one's own access asks twice, saying so.
  await page.getByLabel('New tenant').fill('temp');
  await page.getByLabel('New tenant').press('Enter');
  answers = [true];
  await page.getByRole('button', { name: 'Delete tenant temp' }).click();
  await page.getByRole('cell', { name: 'temp', exact: true }).waitFor({ state: 'detached' });
  assert.match(dialogs.at(-1), /^Delete the tenant temp\? This cannot be undone/);
  const asked = dialogs.length;
  answers = [true, false];
  await page.getByRole('button', { name: 'Delete tenant acme' }).click();
  while (dialogs.length < asked + 2) await page.waitForTimeout(20);
  assert.match(dialogs.at(-1), /removes your own access: you, olivia,/);
  await page.getByRole('button', { name: 'Delete tenant acme' }).waitFor(); // kept: nothing was sent
  const principal = page.getByRole('form', { name: 'Create a principal' });
  await principal.getByLabel('Name').fill('rita');
  await principal.getByLabel('Tenant').fill('guests');
  await principal.getByLabel('Role').selectOption('reader');
  await principal.getByRole('button', { name: 'Create principal' }).click();
  const credential = await page.locator('code.credential').innerText();
  assert.match(credential, /^rita:.{20,}$/);
  const grant = page.getByRole('form', { name: 'Grant' });
  await grant.getByLabel('Grantee kind').selectOption('principal');
  await grant.getByLabel('Grantee name').fill('rita');
  await grant.getByLabel('Namespace granted on').fill('shared');
  await grant.getByLabel('Privilege').selectOption('read');
  await grant.getByRole('button', { name: 'Grant' }).click();
  await page.getByText('Granted read on shared to principal rita').waitFor();
  assert.equal(await grant.getByLabel('Grantee name').inputValue(), '', 'the form resets after a success');
  await page.getByRole('button', { name: 'Revoke read on namespace shared' }).waitFor();
  // A read policy: rita reads the namespace's `secret` columns as nulls.
  const policy = page.getByRole('form', { name: 'Read policy' });
  await policy.getByLabel('Name', { exact: true }).fill('rita sees no secrets');
  await policy.getByLabel('Namespace', { exact: true }).fill('shared');
  await policy.getByLabel('Restricts a').selectOption('principal');
  await policy.getByLabel('Principal, role or tenant').fill('rita');
  await policy.getByLabel('Masks (column=action, one a line)').fill('secret=replace-with-null');
  await policy.getByRole('button', { name: 'Save policy' }).click();
  await page.getByRole('button', { name: 'Delete the read policy rita sees no secrets' }).waitFor();
  assert.equal(await policy.getByLabel('Name', { exact: true }).inputValue(), '', 'the policy form resets after a success');
  assert.match(await page.getByRole('table', { name: 'Read policies you manage or are restricted by' }).innerText(),
    /rita sees no secrets[\s\S]*namespace shared[\s\S]*principal \S+[\s\S]*every row[\s\S]*secret: replace-with-null/);
  await everyControlLabelled('manage');
  await fits('4-manage');

  // The audit log, filtered.
  await page.getByRole('link', { name: 'Audit' }).click();
  await page.getByLabel('Resource contains').fill('namespace shared');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByRole('cell', { name: 'namespace shared' }).first().waitFor();
  // By action and mount too: the grant and the read policy, not the create.
  await page.getByLabel('Action').selectOption('manage');
  await page.getByLabel('Mount').fill('root');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByRole('caption').getByText('2 records, newest first').waitFor();
  assert.match(await page.locator('tbody tr').first().innerText(), /manage[\s\S]*namespace shared[\s\S]*server admin/);
  // A denial says in words what the caller held: the reader, outside the console,
  // tries to write where its grant lets it only read.
  const [ritaId, ritaSecret] = [credential.slice(0, credential.indexOf(':')), credential.slice(credential.indexOf(':') + 1)];
  const issued = await (await fetch(`${base}/v1/oauth/tokens`, {
    method: 'POST', body: new URLSearchParams({ grant_type: 'client_credentials', client_id: ritaId, client_secret: ritaSecret }),
  })).json();
  const write = await fetch(`${base}/v1/catalog/namespaces`, {
    method: 'POST', headers: { Authorization: `Bearer ${issued.access_token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ namespace: ['shared', 'mine'] }),
  });
  assert.equal(write.status, 403);
  await page.getByLabel('Action').selectOption('write');
  await page.getByLabel('Mount').fill('');
  await page.getByLabel('Decision').selectOption('denied');
  await page.getByRole('button', { name: 'Filter' }).click();
  await page.getByRole('cell', { name: 'rita', exact: true }).waitFor();
  await page.getByRole('caption').getByText('1 record, newest first').waitFor();
  assert.match(await page.locator('tbody tr').first().innerText(), /rita[\s\S]*denied[\s\S]*held only: grant \S+/);
  await everyControlLabelled('audit');
  await fits('5-audit');

  // 4. The reader signs in with its client credentials and sees only the namespace granted.
  await page.getByRole('button', { name: 'Sign out' }).focus(); // by keyboard
  await page.keyboard.press('Enter');
  const [id, secret] = [credential.slice(0, credential.indexOf(':')), credential.slice(credential.indexOf(':') + 1)];
  // A wrong secret is refused in plain words, not OAuth's.
  expected = { method: 'POST', path: '/v1/oauth/tokens', status: 401 };
  await page.getByLabel('Client id').fill(id);
  await page.getByLabel('Client secret').fill('not-the-secret');
  await page.getByLabel('Client secret').press('Enter');
  const wrong = await page.getByRole('alert').innerText();
  assert.match(wrong, /Wrong client id or secret\. Check both/);
  assert.doesNotMatch(wrong, /invalid_client/);
  assert.deepEqual(refused, ['/v1/oauth/tokens']);
  refused.length = 0;
  expected = null;
  await page.getByLabel('Client secret').fill(secret);
  await page.getByLabel('Client secret').press('Enter');
  await page.locator('#who').getByText('rita (guests, reader)').waitFor();
  await page.locator('ul.tree > li').first().waitFor();
  const visible = await page.locator('ul.tree > li').evaluateAll((items) => items.map((i) => i.dataset.name));
  assert.deepEqual(visible, ['shared'], 'the reader sees only what its grant allows');
  assert.equal(await page.getByRole('link', { name: 'Audit' }).isVisible(), false);
  await fits('6-reader');

  // A refusal shows the server's own words.
  expected = { method: 'POST', path: '/v1/catalog/namespaces', status: 403 };
  await page.getByRole('link', { name: 'Manage' }).click();
  await page.getByLabel('New namespace').fill('ritas');
  await page.getByRole('button', { name: 'Create namespace' }).click();
  const error = await page.getByRole('alert').innerText();
  assert.match(error, /You may not do this here\. An admin of the tenant that owns it can grant it .*ForbiddenException: .+/);
  assert.deepEqual(refused, ['/v1/catalog/namespaces']);
  await fits('7-refused');
} catch (error) {
  // What the page showed and what went wrong in it, to say why.
  await shot('failed').catch(() => {});
  console.log(`PAGE ${page.url()}\n${await page.locator('body').innerText().catch(() => '')}`);
  console.log(`PROBLEMS ${JSON.stringify(problems, null, 2)}`);
  throw error;
}
await browser.close();
assert.deepEqual(problems, [], 'the page had errors or failed requests');

// The page's weight: every asset it loaded, gzipped.
let gzipped = 0;
for (const path of assets) {
  gzipped += gzipSync(Buffer.from(await (await fetch(`${base}${path}`)).arrayBuffer()), { level: 9 }).length;
}
console.log(`MEASURE console-gzipped-bytes ${gzipped} (${assets.size} files)`);
assert.ok(gzipped <= 40 * 1024, `the console weighs ${gzipped} bytes gzipped, over 40 KB`);
console.log('SCENARIO PASSED');
