/**
 * The status page in a real headless Chromium (Debian's `chromium`, driven by playwright-core;
 * .ci/run installs it when missing), during a demo-sized sync with a write workload: the page
 * loads, its charts draw, and its state, copy bar and figures agree with `/api/v1/progress` read
 * around the same refresh; it shows the curl command for the next request and sends one only
 * after the operator confirms; with the API answering an error it shows the error, not a blank
 * page. A screenshot is saved (FERRY_STATUS_SCREENSHOT, default status-page.png in the test run's
 * temporary directory).
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { generateDataset } from '../../scripts/generate.js';
import { startWorkload, type Workload } from '../../scripts/workload.js';
import { startClusterPair, type ClusterPair } from '../helpers/clusters.js';
import { startFerry, type FerryProcess, type Progress } from './ferry-process.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const SCREENSHOT = process.env.FERRY_STATUS_SCREENSHOT ?? join(tmpdir(), 'status-page.png');

/** The page's refresh count (set after each successful refresh). */
async function refreshes(page: Page): Promise<number> {
  return Number((await page.getAttribute('body', 'data-refreshes')) ?? 0);
}

/** What the browser-side checks use of the page's document (this project compiles without the DOM's types). */
interface PageDocument {
  body: { dataset: Record<string, string | undefined> };
  querySelector(selector: string): { textContent: string | null; dataset: Record<string, string | undefined> } | null;
}

async function valueOf(page: Page, selector: string): Promise<number> {
  return Number(await page.getAttribute(selector, 'data-value'));
}

// Debian's chromium is a system package, not an npm one: without it this suite is skipped, saying why.
const NO_CHROMIUM = existsSync(CHROMIUM) ? false : `${CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)`;

describe('the status page in headless Chromium', { timeout: 180_000, skip: NO_CHROMIUM }, () => {
  let pair: ClusterPair;
  let ferry: FerryProcess;
  let workload: Workload;
  let browser: BrowserContext;

  before(async () => {
    pair = await startClusterPair();
    await generateDataset({ uri: pair.cluster0, sizeMB: 4, seed: 16 });
    ferry = await startFerry(['--cluster0', pair.cluster0, '--cluster1', pair.cluster1, '--partitionSizeMB', '1'], {
      FERRY_HEALTH_INTERVAL_MS: '500',
      FERRY_OPLOG_CHECK_INTERVAL_MS: '1000',
    });
    workload = await startWorkload({ uri: pair.cluster0, opsPerSecond: 100, seed: 16 });
    const started = await ferry.post('start', { source: 'cluster0', destination: 'cluster1' });
    assert.equal(started.status, 200, JSON.stringify(started.body));
    browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'ferry-chromium-')), {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1280, height: 1000 },
    });
  });

  after(async () => {
    await browser?.close();
    await workload?.stop().catch(() => undefined);
    await ferry?.stop();
    await pair?.stop();
  });

  it('shows state, copy bar and figures as /api/v1/progress has them, with its charts drawn', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(message.text());
    });
    await page.goto(`${ferry.base}/`);
    // Charts need a few samples of history (one every 2 s) to draw a line.
    // (Functions, not strings: the page's Content-Security-Policy forbids evaluating strings.)
    await page.waitForFunction(
      () => {
        const document = (globalThis as unknown as { document: PageDocument }).document;
        return ['throughput', 'lag', 'events'].every(
          (name) => Number(document.querySelector(`#chart-${name} .uplot`)?.dataset.drawn ?? 0) >= 3,
        );
      },
      undefined,
      { timeout: 60_000 },
    );

    const before = await ferry.progress();
    const seen = await refreshes(page);
    await page.waitForFunction(
      (count) => Number((globalThis as unknown as { document: PageDocument }).document.body.dataset.refreshes) > count,
      seen,
      { timeout: 10_000 },
    );
    const after = await ferry.progress();

    const state = await page.textContent('#state');
    assert.ok([before.state, after.state].includes(state!), `page state ${state}, API ${before.state} then ${after.state}`);
    assert.equal(await page.getAttribute('#state', 'data-state'), state);

    const copied = await valueOf(page, '#copied-bytes');
    const between = (value: number, pick: (p: Progress) => number, what: string) =>
      assert.ok(pick(before) <= value && value <= pick(after), `${what}: page ${value}, API ${pick(before)} then ${pick(after)}`);
    between(copied, (p) => p.collectionCopy.estimatedCopiedBytes, 'copied bytes');
    between(await valueOf(page, '#events-applied'), (p) => p.totalEventsApplied, 'events applied');
    const total = await valueOf(page, '#total-bytes');
    const fraction = await valueOf(page, '#copy-percent');
    assert.ok(Math.abs(fraction - copied / total) < 1e-9, 'the bar says copied of total');
    const width = await page.$eval('#copy-bar .fill', (fill) => (fill as unknown as { style: { width: string } }).style.width);
    assert.equal(Number.parseFloat(width).toFixed(3), (fraction * 100).toFixed(3));
    assert.equal(await page.textContent('#copy-percent'), `${(fraction * 100).toFixed(1)} %`);

    // Per-namespace progress: one row per collection the API lists, with its partitions.
    const namespaces = ((await (await fetch(`${ferry.base}/api/v1/namespaces`)).json()) as { namespaces: { namespace: string }[] })
      .namespaces;
    assert.ok(namespaces.length > 0);
    assert.equal(await page.locator('#namespaces tbody tr').count(), namespaces.length);
    assert.match((await page.textContent('#namespaces tbody tr .partitions'))!, /^\d+ \/ \d+ \/ \d+$/);

    // Clusters, tuning, and no credential anywhere on the page.
    assert.match((await page.textContent('#cluster-source .name'))!, /^cluster0: 127\.0\.0\.1:\d+$/);
    assert.equal(await page.getAttribute('#cluster-destination', 'data-blocked'), 'true', 'destinationOnly blocks the destination');
    assert.equal(await page.textContent('#tuning tr[data-option="copyWorkers"] td'), String(after.tuning.copyWorkers));
    assert.doesNotMatch(await page.content(), /mongodb:\/\//);

    // The next request, as a curl command for this very address.
    const curl = await page.textContent('#actions .action.recommended pre.curl');
    assert.match(curl!, new RegExp(`^curl -XPOST ${ferry.base}/api/v1/(pause|commit) --data '\\{\\}'$`));

    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    console.log(`status page screenshot: ${SCREENSHOT}`);
    assert.deepEqual(problems, [], 'no script errors');
    await page.close();
  });

  it('sends a request only when the operator clicks and confirms', async () => {
    const page = await browser.newPage();
    await page.goto(`${ferry.base}/`);
    const pause = page.locator('#actions .action[data-command="pause"] button');
    await pause.waitFor();
    page.once('dialog', (dialog) => void dialog.dismiss());
    await pause.click();
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal((await ferry.progress()).state, 'RUNNING', 'dismissed: nothing sent');

    page.once('dialog', (dialog) => {
      assert.match(dialog.message(), /Send pause to Ferry now\?/);
      void dialog.accept();
    });
    await pause.click();
    await ferry.waitForProgress((p) => p.state === 'PAUSED', 30_000);
    await page.waitForFunction(
      () => (globalThis as unknown as { document: PageDocument }).document.querySelector('#state')?.textContent === 'PAUSED',
      undefined,
      { timeout: 10_000 },
    );
    assert.match((await page.textContent('#actions .action.recommended pre.curl'))!, /\/api\/v1\/resume /);
    await page.close();
  });

  it('shows the error when the API answers with one, not a blank page', async () => {
    const page = await browser.newPage();
    await page.route('**/api/v1/progress', (route) =>
      route.fulfill({
        status: 500,
        contentType: 'application/json',
        body: JSON.stringify({ success: false, error: 'InternalError', errorDescription: 'the state machine is on fire' }),
      }),
    );
    await page.goto(`${ferry.base}/`);
    await page.waitForSelector('#error:not([hidden])', { timeout: 10_000 });
    assert.match((await page.textContent('#error-text'))!, /InternalError — the state machine is on fire/);
    assert.equal(await page.isVisible('header h1'), true, 'the page itself is there');
    assert.match((await page.textContent('#updated'))!, /failed/);
    await page.close();
  });
});
