import {
  BufferJSON,
  initAuthCreds,
  proto,
  type AuthenticationCreds,
  type AuthenticationState,
  type SignalDataTypeMap,
} from 'baileys';
import type { ChannelLink } from '../channel.types.ts';

const CREDS_KEY = 'creds';

/** The stored key of one signal key (a session, a pre-key, an app state key, ...). */
const keyOf = (type: string, id: string) => `${type}-${id}`;

/** The link's stored credentials, or undefined when it has none (never linked, or logged out). */
export async function storedCreds(link: ChannelLink): Promise<AuthenticationCreds | undefined> {
  const value = (await link.read([CREDS_KEY])).get(CREDS_KEY);
  return value === undefined ? undefined : (JSON.parse(value, BufferJSON.reviver) as AuthenticationCreds);
}

/**
 * Baileys' authentication state kept in the channel's link storage, as its useMultiFileAuthState
 * keeps it in files: the credentials under one key and each signal key under its type and id, as
 * BufferJSON text (the core seals each value). `saveCreds` is called on every `creds.update`.
 */
export async function linkAuthState(
  link: ChannelLink,
): Promise<{ state: AuthenticationState; saveCreds: () => Promise<void> }> {
  const creds = (await storedCreds(link)) ?? initAuthCreds();
  const state: AuthenticationState = {
    creds,
    keys: {
      async get<T extends keyof SignalDataTypeMap>(type: T, ids: string[]) {
        const values = await link.read(ids.map((id) => keyOf(type, id)));
        const found: { [id: string]: SignalDataTypeMap[T] } = {};
        for (const id of ids) {
          const text = values.get(keyOf(type, id));
          if (text === undefined) continue;
          let value: unknown = JSON.parse(text, BufferJSON.reviver);
          if (type === 'app-state-sync-key') value = proto.Message.AppStateSyncKeyData.fromObject(value as object);
          found[id] = value as SignalDataTypeMap[T];
        }
        return found;
      },
      async set(data) {
        const entries = new Map<string, string | null>();
        for (const [type, values] of Object.entries(data))
          for (const [id, value] of Object.entries(values ?? {}))
            entries.set(keyOf(type, id), value ? JSON.stringify(value, BufferJSON.replacer) : null);
        if (entries.size > 0) await link.write(entries);
      },
      clear: () => link.clear(),
    },
  };
  return {
    state,
    saveCreds: () => link.write(new Map([[CREDS_KEY, JSON.stringify(creds, BufferJSON.replacer)]])),
  };
}
