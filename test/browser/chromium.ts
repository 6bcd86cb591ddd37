import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

/**
 * Headless Chromium for the browser tests: Debian's `chromium` package (installed by .ci/run),
 * driven by playwright-core, which downloads no browser of its own. Each launch gets a fresh
 * profile directory, removed on close. The network is closed here, so every flag that would make
 * Chromium phone home is off.
 */

export const CHROMIUM_PATH = process.env.BURROW_CHROMIUM ?? '/usr/bin/chromium';

// playwright-core adds --headless itself (headless: true) and passes --user-data-dir for the
// persistent context; these are the rest.
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** Why the browser tests cannot run here, or undefined when Chromium is installed. */
export function chromiumMissing(): string | undefined {
  return existsSync(CHROMIUM_PATH) ? undefined : `Chromium is not installed at ${CHROMIUM_PATH} (apt-get install chromium, or set BURROW_CHROMIUM)`;
}

/** Whether this run is CI's, where a missing browser is a failure rather than a skip. */
export const IN_CI = process.env.CI !== undefined && process.env.CI !== '' && process.env.CI !== 'false';

export interface Chromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(): Promise<Chromium> {
  const profile = mkdtempSync(join(tmpdir(), 'burrow-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: FLAGS,
      viewport: { width: 1280, height: 760 },
      acceptDownloads: true,
    });
    return {
      context,
      async close() {
        await context.close();
        rmSync(profile, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(profile, { recursive: true, force: true });
    throw error;
  }
}
