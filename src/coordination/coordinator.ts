/**
 * Which instance coordinates: the one whose shard comes first in `listShards` order (by shard
 * ID). Every instance works it out alone from the source's shards, with nothing to elect and
 * nothing to agree on; it never changes during a migration (shards are fixed while it runs). A
 * coordinator that dies is not replaced: the others wait for it (progress says so) until it is
 * restarted, takes its lease back and continues from its records, as any instance does.
 */
export function chooseCoordinator(members: readonly string[]): string {
  return [...members].sort()[0]!;
}
