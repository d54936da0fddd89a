import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SyncSnapshot } from '../../src/domain/sync-control.js';
import { COUNTER_SPECS } from '../../src/metrics/counters.js';
import { HISTOGRAM_SPECS } from '../../src/metrics/specs.js';
import { metricFamilies } from '../../src/state/metrics.js';
import type { Progress } from '../../src/state/progress.js';

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));

/** Every metric `/metrics` can serve: gauges with every figure present, counters, histograms (summaries). */
function servedNames(): Set<string> {
  const progress = {
    state: 'RUNNING',
    canCommit: true,
    warnings: [],
    collectionCopy: { estimatedTotalBytes: 2, estimatedCopiedBytes: 1 },
    indexBuilding: { indexesBuilt: 1, totalIndexesToBuild: 2, collectionsFinished: 0, collectionsTotal: 1 },
    lag: { overallLagSeconds: 1, crudLagSeconds: 1, ddlLagSeconds: 0 },
  } as unknown as Progress;
  const snapshot = {
    namespaces: [],
    oplogTimeRemaining: { seconds: 60 },
    pingLatencyMs: { source: 3, destination: -1 },
    tuning: { loadLevel: 3, copyWorkers: 4, batchesInFlight: 2, applyLanes: 8, batchBytes: 1024 },
  } as unknown as SyncSnapshot;
  const names = new Set(metricFamilies(progress, snapshot, '0.0.0', 'coordinator').map((family) => family.name));
  for (const spec of Object.values(COUNTER_SPECS)) names.add(spec.prometheusName);
  for (const spec of Object.values(HISTOGRAM_SPECS)) for (const suffix of ['', '_sum', '_count']) names.add(spec.prometheusName + suffix);
  return names;
}

describe('the Grafana dashboard (grafana/ferry-dashboard.json)', () => {
  const dashboard = JSON.parse(readFileSync(root('grafana/ferry-dashboard.json'), 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  const queried = new Set(
    dashboard.panels.flatMap((panel) => panel.targets.flatMap((target) => target.expr.match(/\b(?:ferry|process)_[a-z_]+\b/g) ?? [])),
  );

  it('queries only metrics Ferry serves', () => {
    const served = servedNames();
    assert.deepEqual(
      [...queried].filter((name) => !served.has(name)),
      [],
    );
  });

  it('shows every counter and histogram Ferry keeps', () => {
    const kept = [...Object.values(COUNTER_SPECS), ...Object.values(HISTOGRAM_SPECS)].map((spec) => spec.prometheusName);
    assert.deepEqual(
      kept.filter((name) => !queried.has(name)),
      [],
    );
  });

  it("every metric Ferry serves is in the README's metrics table", () => {
    const readme = readFileSync(root('README.md'), 'utf8');
    const missing = [...servedNames()].filter((name) => !/_(sum|count)$/.test(name) && !readme.includes(`\`${name}\``));
    assert.deepEqual(missing, []);
  });
});
