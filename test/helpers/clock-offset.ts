/**
 * Preloaded into a Ferry process by tests (`node --import`) to give it a host clock that is
 * wrong by `FERRY_TEST_CLOCK_OFFSET_MS`, as on a machine whose time is not synchronised: `Date`
 * (and `Date.now()`) only. Timers and `performance.now()` stay as they are, as they would on
 * such a host.
 */
const offsetMs = Number(process.env.FERRY_TEST_CLOCK_OFFSET_MS ?? 0);
const SystemDate = Date;

class OffsetDate extends SystemDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(SystemDate.now() + offsetMs);
    else super(...(args as [string]));
  }

  static override now(): number {
    return SystemDate.now() + offsetMs;
  }
}

globalThis.Date = OffsetDate as DateConstructor;
