// Standalone mode: the snapshot comes from a YAML or JSON file, watched and hot-reloaded with last-good semantics.
import { readFileSync, watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { SnapshotHolder } from './holder.ts';
import type { CompileOptions } from './runtime.ts';
import { compileSnapshot } from './runtime.ts';
import type { Snapshot } from './schema.ts';
import { parseSnapshot } from './validate.ts';

export interface Logger {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export function readSnapshotFile(path: string): Snapshot {
  const text = readFileSync(path, 'utf8');
  const data: unknown = path.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  return parseSnapshot(data ?? {}, path);
}

export interface FileSource {
  close(): void;
  /**
   * Loads the file now (throws when it is rejected): a writer in this process (the admin API) calls it after its
   * rename so its answer follows the new snapshot, instead of waiting for the watcher's debounce.
   */
  reload(): void;
}

/** Loads once (throwing when the first load fails) and then reloads on every change of the file. */
export function watchSnapshotFile(path: string, holder: SnapshotHolder, log: Logger, opts: CompileOptions = {}): FileSource {
  const file = resolve(path);
  const load = (): void => {
    const snap = compileSnapshot(readSnapshotFile(file), { ...opts, warn: (m) => log.warn({ config: file }, m) });
    if (holder.current?.version === snap.version) return;
    holder.set(snap);
    log.info({ config: file, version: snap.version, models: snap.models.length, keys: snap.keysByHash.size }, 'snapshot loaded');
  };
  load();
  let timer: NodeJS.Timeout | undefined;
  // Watch the directory: editors and our own CLI replace the file by rename, which a file watch would lose.
  const watcher: FSWatcher = watch(dirname(file), (_event, name) => {
    if (name !== null && name !== basename(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      try {
        load();
      } catch (err) {
        log.error({ config: file, err: (err as Error).message }, 'config change rejected; still serving the last good snapshot');
      }
    }, 50);
  });
  return {
    reload: load,
    close() {
      clearTimeout(timer);
      watcher.close();
    },
  };
}
