/** `rollflow codec-server`: the codec server of a config, in the foreground until SIGINT/SIGTERM. */
import { once } from 'node:events';
import type { LoadedConfig } from '../configs';
import { ConfigError } from '../configs';
import { createLogger } from '../logging';
import { describeStore } from '../core';
import { openSampleStore } from '../store';
import { encryptionCodec } from './encryption';
import { createCodecServer } from './server';

export async function runCodecServer({ config, derived, source }: LoadedConfig): Promise<void> {
  const url = config.temporal.codec_url;
  if (!url) throw new ConfigError(source, [{ path: 'temporal.codec_url', given: undefined, expected: 'the URL the codec server listens on, e.g. http://127.0.0.1:8234' }]);
  const log = createLogger('codec');
  const { hostname, port } = new URL(url);
  const server = createCodecServer({ codecs: [encryptionCodec(config)].filter((c) => c !== undefined), store: openSampleStore(derived.sample_store), uiOrigin: new URL(config.temporal.ui_url).origin, baseUrl: url.replace(/\/$/, '') });
  server.listen(Number(port || 80), hostname.replace(/^\[|\]$/g, ''));
  await once(server, 'listening');
  log.info({ url, store: describeStore(derived.sample_store), ui: config.temporal.ui_url }, 'codec server ready');
  await Promise.race([once(process, 'SIGINT'), once(process, 'SIGTERM')]);
  server.close();
}
