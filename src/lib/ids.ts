import { v7 } from 'uuid';

/** Time-ordered ids (UUIDv7): new rows land at the end of their indexes. */
export const newId = (): string => v7();

/** A UUID in its plain hexadecimal form, the one the database takes (any version). */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export const isUuid = (value: string): boolean => UUID_PATTERN.test(value);
