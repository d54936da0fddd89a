// Ferry's status page: reads /api/v1/progress, /api/v1/status, /api/v1/namespaces and /metrics
// every 2 s and shows them. It sends a command only when the operator clicks "Send" and confirms.
// Plain browser JavaScript, no build step; charts by uPlot (served from node_modules).
'use strict';

const REFRESH_MS = 2000;
const MiB = 1024 * 1024;

const $ = (selector) => document.querySelector(selector);

/** Everything fetched so far; samples accumulate (the server keeps the last hour). */
const model = { progress: null, status: null, namespaces: [], metrics: {}, samples: [], refreshes: 0 };

function formatBytes(bytes) {
  if (bytes === null || bytes === undefined) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}

function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '–';
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function formatNumber(n) {
  return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US');
}

/** Sets text and, for tests and scripts, the raw value. */
function show(selector, text, raw) {
  const element = $(selector);
  element.textContent = text;
  if (raw !== undefined) element.dataset.value = raw === null ? '' : String(raw);
}

/** Parses Prometheus text into {name{labels}: value}. */
function parseMetrics(text) {
  const values = {};
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    values[line.slice(0, space)] = Number(line.slice(space + 1));
  }
  return values;
}

async function getJson(path) {
  const response = await fetch(path, { cache: 'no-store' });
  let body;
  try {
    body = await response.json();
  } catch {
    throw new Error(`${path} answered HTTP ${response.status} without JSON`);
  }
  if (!response.ok || body.success !== true) {
    const name = body.error ?? `HTTP ${response.status}`;
    throw new Error(`${path}: ${name}${body.errorDescription ? ` — ${body.errorDescription}` : ''}`);
  }
  return body;
}

/** Rate per second of `pick` over the samples of the last `windowMs`. */
function ratePerSecond(samples, pick, windowMs) {
  const last = samples[samples.length - 1];
  if (last === undefined) return null;
  const first = samples.find((s) => s.t >= last.t - windowMs && pick(s) !== null);
  if (first === undefined || first === last || pick(last) === null) return null;
  return (pick(last) - pick(first)) / ((last.t - first.t) / 1000);
}

function renderHeader() {
  const { progress, status } = model;
  const state = $('#state');
  state.textContent = progress.state;
  state.dataset.state = progress.state;
  show('#info', progress.info ?? (progress.state === 'IDLE' ? 'waiting for a start request' : ''));
  show('#instance', `instance ${progress.mongosyncID ?? status?.id ?? ''}`);
  show('#updated', `updated ${new Date().toLocaleTimeString()}`);
}

function renderWarnings() {
  const warnings = model.progress.warnings ?? [];
  const list = $('#warnings');
  list.replaceChildren(
    ...warnings.map((text) => {
      const item = document.createElement('li');
      item.textContent = text;
      return item;
    }),
  );
  $('#no-warnings').hidden = warnings.length > 0;
  $('#warnings-card').dataset.count = String(warnings.length);
}

function renderTimeline() {
  const timeline = model.status?.timeline ?? [];
  $('#timeline').replaceChildren(
    ...timeline.map((change, index) => {
      const item = document.createElement('li');
      item.textContent = change.state;
      const time = document.createElement('time');
      time.dateTime = change.at;
      time.textContent = new Date(change.at).toLocaleTimeString();
      item.append(time);
      if (index === timeline.length - 1) item.className = 'current';
      return item;
    }),
  );
}

function setBar(selector, fraction) {
  $(`${selector} .fill`).style.width = `${Math.max(0, Math.min(1, fraction)) * 100}%`;
}

function renderCopy() {
  const copy = model.progress.collectionCopy;
  if (copy === null) {
    setBar('#copy-bar', 0);
    show('#copy-percent', 'no sync', null);
    show('#copied-bytes', '–', null);
    show('#total-bytes', '–', null);
  } else {
    const fraction = copy.estimatedCopiedBytes / copy.estimatedTotalBytes;
    setBar('#copy-bar', fraction);
    show('#copy-percent', `${(fraction * 100).toFixed(1)} %`, fraction);
    show('#copied-bytes', formatBytes(copy.estimatedCopiedBytes), copy.estimatedCopiedBytes);
    show('#total-bytes', formatBytes(copy.estimatedTotalBytes), copy.estimatedTotalBytes);
  }
  const rate = ratePerSecond(model.samples, (s) => s.copiedBytes, 60_000);
  show('#copy-rate', rate === null ? '–' : `${(rate / MiB).toFixed(1)} MiB/s`);
  const left = copy === null ? null : copy.estimatedTotalBytes - copy.estimatedCopiedBytes;
  show('#copy-eta', left === 0 ? 'done' : rate && rate > 0 && left !== null ? formatSeconds(left / rate) : '–');

  const rows = model.namespaces.map((ns) => {
    const row = document.createElement('tr');
    row.dataset.namespace = ns.namespace;
    const name = document.createElement('td');
    name.textContent = ns.namespace;
    const bar = document.createElement('td');
    const outer = document.createElement('div');
    outer.className = 'bar small';
    const fill = document.createElement('div');
    fill.className = 'fill';
    fill.style.width = `${ns.estimatedTotalBytes > 0 ? (ns.estimatedCopiedBytes / ns.estimatedTotalBytes) * 100 : 100}%`;
    outer.append(fill);
    bar.append(outer);
    const bytes = document.createElement('td');
    bytes.textContent = `${formatBytes(ns.estimatedCopiedBytes)} of ${formatBytes(ns.estimatedTotalBytes)}`;
    const partitions = document.createElement('td');
    partitions.className = 'partitions';
    const { done, inProgress, total } = ns.partitions;
    partitions.textContent = `${done} / ${inProgress} / ${total}`;
    row.append(name, bar, bytes, partitions);
    return row;
  });
  $('#namespaces tbody').replaceChildren(...rows);
  $('#no-namespaces').hidden = rows.length > 0;
}

function renderEvents() {
  const { progress, status, metrics } = model;
  show('#events-applied', formatNumber(progress.totalEventsApplied), progress.totalEventsApplied);
  const rate = ratePerSecond(model.samples, (s) => s.eventsApplied, 60_000);
  show('#events-rate', rate === null ? '–' : rate.toFixed(1));
  show('#lag', progress.lagTimeSeconds === null ? '–' : `${progress.lagTimeSeconds} s`, progress.lagTimeSeconds);
  show('#catch-up', progress.estimatedSecondsToCEACatchup === null ? '–' : formatSeconds(progress.estimatedSecondsToCEACatchup));
  const oplog = progress.estimatedOplogTimeRemaining;
  show('#oplog', oplog ?? (status?.oplogUnbounded ? 'more than 72 hours' : '–'), oplog);
  const p99 = metrics['ferry_lag_seconds{quantile="0.99"}'];
  show('#lag-p99', p99 === undefined || metrics['ferry_lag_seconds_count'] === 0 ? '–' : `${p99.toFixed(2)} s`);
}

function renderIndexes() {
  const building = model.progress.indexBuilding;
  if (building === null || building === undefined) {
    setBar('#index-bar', 0);
    show('#index-label', '–');
    show('#index-text', 'Built after the copy (with buildIndexes afterDataCopy, the default).');
    return;
  }
  const fraction = building.totalIndexesToBuild > 0 ? building.indexesBuilt / building.totalIndexesToBuild : 1;
  setBar('#index-bar', fraction);
  show('#index-label', `${building.indexesBuilt} of ${building.totalIndexesToBuild} indexes`);
  show('#index-text', `${building.collectionsFinished} of ${building.collectionsTotal} collections finished`);
}

function renderClusters() {
  const status = model.status;
  for (const side of ['source', 'destination']) {
    const row = $(`#cluster-${side}`);
    const cluster = status?.[side];
    row.querySelector('.name').textContent = cluster?.name ?? '–';
    const ping = cluster?.pingLatencyMs;
    row.querySelector('.ping').textContent =
      ping === null || ping === undefined ? '–' : ping < 0 ? 'no answer' : ping < 1 ? '< 1 ms' : `${Math.round(ping)} ms`;
    row.querySelector('.blocking').textContent =
      cluster === null || cluster === undefined ? '–' : cluster.writesBlocked ? 'blocked' : 'open';
    row.dataset.blocked = cluster?.writesBlocked ? 'true' : 'false';
  }
  const mode = status?.request?.enableUserWriteBlocking;
  show('#blocking-mode', mode ? `enableUserWriteBlocking: ${mode}` : '');
}

function renderTuning() {
  const tuning = model.status?.tuning ?? model.progress.tuning;
  const rows = Object.entries(tuning ?? {}).map(([name, value]) => {
    const row = document.createElement('tr');
    row.dataset.option = name;
    const key = document.createElement('th');
    key.textContent = name;
    const cell = document.createElement('td');
    cell.textContent = name === 'batchBytes' ? formatBytes(value) : String(value);
    row.append(key, cell);
    return row;
  });
  $('#tuning tbody').replaceChildren(...rows);
}

function renderVerification() {
  const verification = model.progress.verification;
  $('#verification-card').hidden = !verification;
  if (!verification) return;
  const rows = [];
  for (const side of ['source', 'destination']) {
    const figures = verification[side] ?? {};
    const row = document.createElement('tr');
    const key = document.createElement('th');
    key.textContent = side;
    const cell = document.createElement('td');
    const hashed =
      figures.hashedDocumentCount !== undefined
        ? `${formatNumber(figures.hashedDocumentCount)} of ~${formatNumber(figures.estimatedDocumentCount)} documents`
        : '';
    cell.textContent = [figures.phase, hashed].filter(Boolean).join(' — ');
    row.append(key, cell);
    rows.push(row);
  }
  $('#verification tbody').replaceChildren(...rows);
}

function curlOf(action) {
  return `curl -XPOST ${location.origin}${action.path} --data '${JSON.stringify(action.body)}'`;
}

async function send(action, result) {
  if (!window.confirm(`Send ${action.command} to Ferry now?\n\n${curlOf(action)}`)) return;
  result.textContent = 'sending…';
  try {
    const response = await fetch(action.path, { method: 'POST', body: JSON.stringify(action.body) });
    const body = await response.json();
    result.textContent = body.success ? 'accepted' : `refused: ${body.error} — ${body.errorDescription}`;
  } catch (error) {
    result.textContent = `failed: ${error.message}`;
  }
  void refresh();
}

/** Rebuilt only when the legal actions change, so a click is never lost to a redraw. */
let shownActions = '';
function renderActions() {
  const status = model.status;
  const actions = status?.actions ?? [];
  show('#waiting', status?.waitingFor ? `Waiting for ${status.waitingFor}.` : actions.length === 0 ? 'Nothing to do.' : '');
  const key = JSON.stringify(actions) + location.origin;
  if (key === shownActions) return;
  shownActions = key;
  $('#actions').replaceChildren(
    ...actions.map((action) => {
      const box = document.createElement('div');
      box.className = action.recommended ? 'action recommended' : 'action';
      box.dataset.command = action.command;
      const title = document.createElement('strong');
      title.textContent = action.command;
      const text = document.createElement('span');
      text.className = 'muted';
      text.textContent = ` — ${action.description}`;
      const pre = document.createElement('pre');
      pre.className = 'curl';
      pre.textContent = curlOf(action);
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = `Send ${action.command}…`;
      const result = document.createElement('span');
      result.className = 'result muted';
      button.addEventListener('click', () => void send(action, result));
      box.append(title, text, pre, button, result);
      return box;
    }),
  );
}

// Charts: one uPlot per series, x in seconds since the epoch.
const charts = {};
function chartData(samples, pick) {
  const xs = [];
  const ys = [];
  for (let i = 1; i < samples.length; i++) {
    xs.push(samples[i].t / 1000);
    ys.push(pick(samples[i - 1], samples[i]));
  }
  return [xs, ys];
}

function perSecond(field, scale = 1) {
  return (a, b) => (a[field] === null || b[field] === null ? null : Math.max(0, (b[field] - a[field]) / ((b.t - a.t) / 1000)) / scale);
}

const SERIES = {
  throughput: { pick: perSecond('copiedBytes', MiB), label: 'MiB/s', color: '#2f6fde' },
  lag: { pick: (_a, b) => b.lagSeconds, label: 'seconds', color: '#c27803' },
  events: { pick: perSecond('eventsApplied'), label: 'events/s', color: '#1f9d55' },
};

function renderCharts() {
  if (typeof uPlot === 'undefined') return;
  for (const [name, spec] of Object.entries(SERIES)) {
    const data = chartData(model.samples, spec.pick);
    const holder = $(`#chart-${name}`);
    if (charts[name] === undefined) {
      const width = Math.max(300, holder.clientWidth || 380);
      charts[name] = new uPlot(
        {
          width,
          height: 180,
          scales: { x: { time: true } },
          series: [{}, { label: spec.label, stroke: spec.color, width: 2, spanGaps: true }],
          axes: [{}, { size: 50 }],
          legend: { show: false },
          hooks: { draw: [(u) => (u.root.dataset.drawn = String(u.data[0].length))] },
        },
        data,
        holder,
      );
    } else {
      charts[name].setData(data);
    }
  }
}

function render() {
  renderHeader();
  renderWarnings();
  renderTimeline();
  renderCopy();
  renderEvents();
  renderIndexes();
  renderClusters();
  renderTuning();
  renderVerification();
  renderActions();
  renderCharts();
}

function showError(error) {
  $('#error').hidden = false;
  show('#error-text', error.message);
  show('#updated', `last attempt ${new Date().toLocaleTimeString()} failed`);
}

async function refresh() {
  try {
    const since = model.samples.length > 0 ? model.samples[model.samples.length - 1].t : 0;
    const [progress, status, namespaces, metricsText] = await Promise.all([
      getJson('/api/v1/progress'),
      getJson(`/api/v1/status?since=${since}`),
      getJson('/api/v1/namespaces'),
      fetch('/metrics', { cache: 'no-store' }).then((r) => (r.ok ? r.text() : '')),
    ]);
    model.progress = progress.progress;
    model.status = status.status;
    model.namespaces = namespaces.namespaces;
    model.metrics = parseMetrics(metricsText);
    const hourAgo = Date.now() - 3_600_000;
    model.samples = [...model.samples, ...status.status.history.samples].filter((s) => s.t >= hourAgo);
    $('#error').hidden = true;
    render();
    model.refreshes++;
    document.body.dataset.refreshes = String(model.refreshes);
  } catch (error) {
    showError(error);
  }
}

document.addEventListener('DOMContentLoaded', () => {
  void refresh();
  setInterval(() => void refresh(), REFRESH_MS);
});
