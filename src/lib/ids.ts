import { v7 } from 'uuid';

/** Time-ordered ids (UUIDv7): new rows land at the end of their indexes. */
export const newId = (): string => v7();
