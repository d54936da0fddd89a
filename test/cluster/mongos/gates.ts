/**
 * Per-namespace gates in the router: writes to a collection pass freely, except while a chunk
 * migration (or another metadata change) of that collection holds it exclusively. The migration
 * waits for the writes already under way; writes arriving meanwhile wait for it, as writes wait
 * out a donor's critical section on mongod (and then go where the new routing table says).
 */
interface Gate {
  writers: number;
  drained: (() => void)[];
  /** Resolves when the exclusive holder leaves. */
  held: Promise<void> | undefined;
}

export class NamespaceGates {
  private readonly gates = new Map<string, Gate>();

  private gate(ns: string): Gate {
    let gate = this.gates.get(ns);
    if (!gate) this.gates.set(ns, (gate = { writers: 0, drained: [], held: undefined }));
    return gate;
  }

  /** Enters as a writer; call the returned function when the write is done. */
  async write(ns: string): Promise<() => void> {
    const gate = this.gate(ns);
    while (gate.held) await gate.held;
    gate.writers++;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      gate.writers--;
      if (gate.writers === 0) for (const wake of gate.drained.splice(0)) wake();
    };
  }

  /** Takes the namespace exclusively (after the writes under way); the returned function releases it. */
  async exclusive(ns: string): Promise<() => void> {
    const gate = this.gate(ns);
    while (gate.held) await gate.held;
    let release!: () => void;
    gate.held = new Promise<void>((resolve) => (release = resolve));
    while (gate.writers > 0) await new Promise<void>((resolve) => gate.drained.push(resolve));
    return () => {
      gate.held = undefined;
      release();
    };
  }
}
