import { randomBytes } from 'node:crypto';
import type { Timers } from '../../gateway-connection/timers.ts';
import type { MuxadoSession } from './session.ts';
import type { MuxadoStream } from './stream.ts';
import { HEARTBEAT_STREAM_TYPE, openTypedStream } from './typed.ts';

/**
 * Heartbeats (ngrok-rust `muxado/src/heartbeat.rs`): either side may open a stream of type
 * HEARTBEAT_STREAM_TYPE and write a random 4-byte id on it; the other side writes every byte back.
 * The agent opens one before it authenticates; the gateway answers it and runs its own, so that a
 * peer that went silent (or stopped reading) is found within interval + tolerance.
 */

const ID_BYTES = 4;

/** Answers the peer's heartbeats on `stream`: every byte back, with flow control. */
export function echoHeartbeats(stream: MuxadoStream): void {
  stream.on('error', () => {});
  stream.pipe(stream);
}

export interface HeartbeatOptions {
  /** Time between an answer and the next heartbeat. */
  readonly interval: number;
  /** Time the peer has to answer a heartbeat. */
  readonly tolerance: number;
  readonly timers: Timers;
  /** Words naming the tolerance at the end of the timeout's message (`(limit …)`). */
  readonly limitNote?: string;
  /** Called when the peer does not answer in time, answers wrongly or resets the stream. */
  onFailure(message: string): void;
  /** Called on each right answer. */
  onAnswer?(): void;
}

/** Sends heartbeats on a new stream until stopped or failed. */
export function startHeartbeat(session: MuxadoSession, options: HeartbeatOptions): { stop(): void } {
  const stream = openTypedStream(session, HEARTBEAT_STREAM_TYPE);
  let timer: { cancel(): void } | undefined;
  let expected: Buffer | undefined;
  let answer = Buffer.alloc(0);
  let stopped = false;

  const stop = () => {
    stopped = true;
    timer?.cancel();
  };
  const fail = (message: string) => {
    if (stopped) return;
    stop();
    options.onFailure(message);
  };
  const schedule = () => {
    timer = options.timers.setTimeout(beat, options.interval);
  };
  const beat = () => {
    expected = randomBytes(ID_BYTES);
    stream.write(expected);
    const note = options.limitNote ? ` ${options.limitNote}` : '';
    timer = options.timers.setTimeout(() => fail(`no heartbeat answer within ${options.tolerance} ms${note}`), options.tolerance);
  };

  stream.on('data', (chunk: Buffer) => {
    answer = Buffer.concat([answer, chunk]);
    if (!expected) return fail('the peer sent heartbeat bytes it was not asked for');
    if (answer.length < ID_BYTES) return;
    const matches = answer.subarray(0, ID_BYTES).equals(expected) && answer.length === ID_BYTES;
    answer = Buffer.alloc(0);
    expected = undefined;
    if (!matches) return fail('the heartbeat answer did not match');
    timer?.cancel();
    options.onAnswer?.();
    if (!stopped) schedule();
  });
  stream.on('error', (error: Error) => fail(`heartbeat stream failed: ${error.message}`));
  stream.on('end', () => fail('the peer closed the heartbeat stream'));
  schedule();
  return { stop };
}
