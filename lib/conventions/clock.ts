/** A source of the current time. Everything in Burrow that needs "now" asks a Clock. */
export interface Clock {
  now(): Date;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => new Date() };

/**
 * A clock that only moves when told to: for tests and deterministic mode. Starts at `start` and
 * never goes backwards unless `set` is called with an earlier time.
 */
export class ManualClock implements Clock {
  #ms: number;
  constructor(start: Date | string = '2026-01-01T00:00:00Z') {
    this.#ms = new Date(start).getTime();
    if (Number.isNaN(this.#ms)) throw new Error(`burrow: invalid clock start ${String(start)}`);
  }
  now(): Date {
    return new Date(this.#ms);
  }
  /** Moves the clock forward by `seconds` (fractions allowed). */
  advance(seconds: number): Date {
    this.#ms += Math.round(seconds * 1000);
    return this.now();
  }
  /** Jumps to an absolute time. */
  set(time: Date | string): Date {
    const ms = new Date(time).getTime();
    if (Number.isNaN(ms)) throw new Error(`burrow: invalid clock time ${String(time)}`);
    this.#ms = ms;
    return this.now();
  }
}

let formattedSecond = NaN;
let formatted = '';

/** RFC 3339, UTC, whole seconds: the form of every time Burrow returns. */
export function formatTime(date: Date): string {
  // Writes stamp the same second many times over; an invalid date still throws (NaN never matches).
  const second = Math.floor(date.getTime() / 1000);
  if (second === formattedSecond) return formatted;
  formatted = date.toISOString().replace(/\.\d{3}Z$/, 'Z');
  formattedSecond = second;
  return formatted;
}
