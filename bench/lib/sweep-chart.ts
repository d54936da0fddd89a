/**
 * The concurrency sweep of `bench:scale` as an SVG chart: one panel per figure (throughput,
 * Ferry's CPU per GB, Ferry's peak RSS), `batchBytes` along the x axis, one bar per
 * `--copyWorkers` value in each group, each bar labelled with its value. Plain SVG text, no
 * dependency: the chart is a few dozen rectangles.
 */
import type { SweepCell } from '../scale.js';
import type { MachineInfo } from './results.js';

/** One panel: a figure of each cell, and whether more is better. */
interface Panel {
  title: string;
  unit: string;
  value: (cell: SweepCell) => number;
  higherIsBetter: boolean;
}

const PANELS: Panel[] = [
  { title: 'Throughput', unit: 'MB/s', value: (cell) => cell.MBps, higherIsBetter: true },
  { title: "Ferry's CPU per GB copied", unit: 's/GB', value: (cell) => cell.cpuSecondsPerGB, higherIsBetter: false },
  { title: "Ferry's peak RSS", unit: 'MB', value: (cell) => cell.peakRssMB, higherIsBetter: false },
];

/** Bar colours, one per `--copyWorkers` value (colour-blind-safe palette). */
const COLOURS = ['#0072b2', '#e69f00', '#009e73', '#cc79a7', '#56b4e9', '#d55e00'];

const PANEL_WIDTH = 320;
const PANEL_HEIGHT = 220;
const MARGIN = { top: 88, left: 50, bottom: 60, gap: 40 };

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const format = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(2));

/** The SVG of a sweep's cells; `subtitle` says what was measured and how (size, load, command). */
export function sweepChartSvg(cells: readonly SweepCell[], subtitle: string): string {
  const workers = [...new Set(cells.map((cell) => cell.copyWorkers))].sort((a, b) => a - b);
  const batches = [...new Set(cells.map((cell) => cell.batchBytesMB))].sort((a, b) => a - b);
  // Wide enough for the subtitle too (about 6 px per character at 11 px).
  const width = Math.max(MARGIN.left + PANELS.length * (PANEL_WIDTH + MARGIN.gap), 2 * MARGIN.left + Math.ceil(subtitle.length * 6));
  const height = MARGIN.top + PANEL_HEIGHT + MARGIN.bottom;
  const runs = copiesPerCell(cells);
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="white"/>`,
    `<text x="${MARGIN.left}" y="20" font-size="15" font-weight="bold">bench:scale concurrency sweep: --copyWorkers × --batchBytes</text>`,
    `<text x="${MARGIN.left}" y="38" fill="#444">${escape(subtitle)}</text>`,
  ];
  // Legend: one swatch per --copyWorkers value.
  workers.forEach((count, i) => {
    const x = MARGIN.left + i * 120;
    parts.push(`<rect x="${x}" y="48" width="10" height="10" fill="${COLOURS[i % COLOURS.length]}"/>`);
    parts.push(`<text x="${x + 14}" y="57">copyWorkers ${count}</text>`);
  });
  PANELS.forEach((panel, p) => {
    const left = MARGIN.left + p * (PANEL_WIDTH + MARGIN.gap);
    const top = MARGIN.top;
    const values = cells.map(panel.value);
    const max = Math.max(...values, Number.MIN_VALUE) * 1.15;
    const best = panel.higherIsBetter ? Math.max(...values) : Math.min(...values);
    const y = (value: number) => Math.round((top + PANEL_HEIGHT - (value / max) * PANEL_HEIGHT) * 10) / 10;
    parts.push(
      `<text x="${left}" y="${top - 8}" font-weight="bold">${escape(panel.title)} (${panel.unit}, ${panel.higherIsBetter ? 'higher' : 'lower'} is better)</text>`,
    );
    parts.push(`<line x1="${left}" y1="${top + PANEL_HEIGHT}" x2="${left + PANEL_WIDTH}" y2="${top + PANEL_HEIGHT}" stroke="#333"/>`);
    parts.push(`<line x1="${left}" y1="${top}" x2="${left}" y2="${top + PANEL_HEIGHT}" stroke="#333"/>`);
    for (const fraction of [0.25, 0.5, 0.75, 1]) {
      const tick = (max / 1.15) * fraction;
      parts.push(`<line x1="${left}" y1="${y(tick)}" x2="${left + PANEL_WIDTH}" y2="${y(tick)}" stroke="#ddd"/>`);
      parts.push(`<text x="${left - 4}" y="${y(tick) + 4}" text-anchor="end" fill="#666">${format(tick)}</text>`);
    }
    const groupWidth = PANEL_WIDTH / batches.length;
    const barWidth = (groupWidth * 0.8) / workers.length;
    batches.forEach((batch, g) => {
      const groupLeft = left + g * groupWidth + groupWidth * 0.1;
      parts.push(
        `<text x="${groupLeft + groupWidth * 0.4}" y="${top + PANEL_HEIGHT + 16}" text-anchor="middle">batchBytes ${batch} MiB</text>`,
      );
      workers.forEach((count, w) => {
        const cell = cells.find((c) => c.copyWorkers === count && c.batchBytesMB === batch);
        if (cell === undefined) return;
        const value = panel.value(cell);
        const x = groupLeft + w * barWidth;
        const stroke = value === best ? ' stroke="black" stroke-width="2"' : '';
        parts.push(
          `<rect x="${x.toFixed(1)}" y="${y(value).toFixed(1)}" width="${(barWidth - 2).toFixed(1)}" height="${(top + PANEL_HEIGHT - y(value)).toFixed(1)}" fill="${COLOURS[w % COLOURS.length]}"${stroke}/>`,
        );
        parts.push(
          `<text x="${(x + barWidth / 2 - 1).toFixed(1)}" y="${(y(value) - 3).toFixed(1)}" text-anchor="middle" font-size="9">${format(value)}</text>`,
        );
      });
    });
  });
  parts.push(
    `<text x="${MARGIN.left}" y="${height - 12}" fill="#444">Outlined: the best cell of each panel. ${runs > 1 ? `Medians of ${runs} copies` : 'One copy'} per cell; compare within one chart only.</text>`,
  );
  parts.push('</svg>');
  return `${parts.join('\n')}\n`;
}

/** What the chart says under its title: the source size, the machine and its load, the command. */
export function sweepSubtitle(
  sweep: { sizeMB: number; cells: readonly SweepCell[] },
  machine: MachineInfo | undefined,
  command: string | undefined,
): string {
  const runs = copiesPerCell(sweep.cells);
  const copies = runs > 1 ? `, each cell the median of ${runs} copies` : '';
  const where =
    machine === undefined ? '' : `, ${machine.cpus} cores (${machine.cpuModel}), 1-minute load ${machine.loadAverage1m.toFixed(1)}`;
  return `${sweep.sizeMB} MB generated source, a fresh destination per copy${copies}${where}${command === undefined ? '' : ` — ${command}`}`;
}

/** How many copies each cell's figures are the medians of (results written before `--runs` carry none: one). */
function copiesPerCell(cells: readonly SweepCell[]): number {
  return cells[0]?.runs ?? 1;
}
