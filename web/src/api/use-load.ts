// The pages' one way to read an answer of the session API: loaded when shown, again when what it is
// for changes (`key`) and at reload(), with its error in the service's words.
import { useCallback, useEffect, useRef, useState } from 'react';
import { errorMessage } from './client';

/** What an openapi-fetch call answers. */
type Answer<T> = { data?: T; error?: unknown; response: Response };

/** A read's outcome: the data, or the error's message and the status that came with it. */
type Outcome<T> = { data?: T; error?: string; status?: number };

export interface Loaded<T> extends Outcome<T> {
  /** No answer yet for the current key (a reload keeps the last answer shown). */
  loading: boolean;
  /** Reads again; resolves once the answer is shown. */
  reload: () => Promise<void>;
  /** Shows this data instead, as a write answered it (a read on its way is dropped). */
  replace: (data: T) => void;
}

async function settle<T>(load: () => Promise<Answer<T>>): Promise<Outcome<T>> {
  try {
    const { data, error, response } = await load();
    return data === undefined ? { error: errorMessage(error, response), status: response.status } : { data };
  } catch {
    return { error: errorMessage(undefined) };
  }
}

/**
 * Reads with `load` when the component mounts, whenever `key` changes (say, the id in the address)
 * and at each reload(). Only the latest read's answer is kept, should an earlier one arrive after it.
 */
export function useLoad<T>(load: () => Promise<Answer<T>>, key = ''): Loaded<T> {
  const [shown, setShown] = useState<Outcome<T> & { key: string }>();
  // The latest loader and read, kept out of render: a page passes a new closure at every render.
  const loader = useRef(load);
  const latest = useRef(0);
  useEffect(() => {
    loader.current = load;
  });

  const read = useCallback(async (forKey: string, wanted: () => boolean = () => true) => {
    const seq = ++latest.current;
    const outcome = await settle(loader.current);
    if (seq === latest.current && wanted()) setShown({ ...outcome, key: forKey });
  }, []);

  useEffect(() => {
    // A read still on its way when the page goes is dropped.
    let wanted = true;
    void read(key, () => wanted);
    return () => {
      wanted = false;
    };
  }, [key, read]);

  const reload = useCallback(() => read(key), [key, read]);
  const replace = useCallback(
    (data: T) => {
      latest.current++;
      setShown({ data, key });
    },
    [key],
  );
  const current = shown?.key === key ? shown : undefined;
  return { data: current?.data, error: current?.error, status: current?.status, loading: !current, reload, replace };
}
