import { IdFactory, seededRandom } from '../conventions/ids.ts';
import type { StoreTransaction } from '../store.ts';

/**
 * Deterministic mode's ids, per account. With a seed, the randomness of a write comes from
 * (seed, account, n), n being the number of the account's earlier successful writes that drew any,
 * and the next n is saved in the same transaction: a failed write saves nothing, and reads, probes,
 * the control plane and other accounts draw nothing. So ids, tokens, serials and derived key
 * material depend only on the seed and the order of successful writes in the account.
 */

const SEQUENCE = 'id_sequence';
const SEQUENCE_ID = 'ids';

interface SequenceRecord {
  id: string;
  /** Writes so far that drew randomness. */
  n: number;
  /** Hex of the newest KSUID, so that later ids keep sorting after it within one second. */
  last: string;
  [field: string]: unknown;
}

export interface AccountIds {
  ids: IdFactory;
  /** Records the draw in the transaction; nothing when the write drew no randomness. */
  save(): Promise<void>;
}

/** Opens the account's id sequence inside a write transaction. */
export async function openAccountIds(tx: StoreTransaction, account: string, seed: number | string, now: () => Date): Promise<AccountIds> {
  const scope = { account, kind: SEQUENCE };
  const stored = (await tx.get(scope, SEQUENCE_ID)) as SequenceRecord | undefined;
  const n = stored?.n ?? 0;
  const source = seededRandom(`${seed}\u0000${account}\u0000${n}`);
  let drawn = false;
  const ids = new IdFactory(
    (size) => {
      drawn = true;
      return source(size);
    },
    now,
    { deterministic: true, ...(stored ? { last: Uint8Array.from(Buffer.from(stored.last, 'hex')) } : {}) },
  );
  return {
    ids,
    save: async () => {
      if (drawn) await tx.put(scope, { id: SEQUENCE_ID, n: n + 1, last: Buffer.from(ids.lastKsuid).toString('hex') });
    },
  };
}
