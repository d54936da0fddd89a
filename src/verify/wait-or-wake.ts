/**
 * A wait that something else can cut short: resolves after `ms`, or as soon as a waker pushed on
 * `wakers` is called (whoever wakes calls every waker and empties the list).
 */
export function waitOrWake(ms: number, wakers: (() => void)[]): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      resolve();
    }
    wakers.push(done);
  });
}
