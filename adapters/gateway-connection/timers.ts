/**
 * The gateways' only source of time: every timeout (handshake, heartbeat, command replies,
 * closing) is set through a Timers, so tests drive them by hand instead of waiting.
 */
export interface Timers {
  /** Calls `callback` after `ms` unless cancelled first. */
  setTimeout(callback: () => void, ms: number): { cancel(): void };
}

/** Node's timers, unref'd: a pending timeout never keeps the process alive by itself. */
export const REAL_TIMERS: Timers = {
  setTimeout(callback, ms) {
    const handle = setTimeout(callback, ms);
    handle.unref();
    return { cancel: () => clearTimeout(handle) };
  },
};
