import { useCallback, useEffect, useState } from 'react';
import { api } from '../api/client';
import { READ_EVENT, useLiveReload } from '../live/live';

/** The sidebar's count of conversations with unread messages ("99+" past 98), kept current by the live stream. */
export function useUnreadTotal(): string | undefined {
  const [count, setCount] = useState(0);
  const load = useCallback(() => {
    void api.GET('/dashboard/api/unread').then(({ data }) => data && setCount(data.unread_conversations));
  }, []);
  useEffect(load, [load]);
  useLiveReload(load, () => true, 800);
  useEffect(() => {
    window.addEventListener(READ_EVENT, load);
    return () => window.removeEventListener(READ_EVENT, load);
  }, [load]);
  if (count === 0) return undefined;
  return count >= 99 ? '99+' : String(count);
}
