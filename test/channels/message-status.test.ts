import { describe, expect, it } from 'vitest';
import { canMoveStatus, messageStatusOf, type MessageStatus } from '../../src/channels/provider.ts';

describe('message status order', () => {
  const allowed: [MessageStatus, MessageStatus][] = [
    ['PENDING', 'SENT'],
    ['PENDING', 'DELIVERED'],
    ['PENDING', 'READ'],
    ['PENDING', 'ERROR'],
    ['SENT', 'DELIVERED'],
    ['SENT', 'READ'],
    ['SENT', 'ERROR'],
    ['DELIVERED', 'READ'],
  ];
  it.each(allowed)('%s -> %s moves', (from, to) => expect(canMoveStatus(from, to)).toBe(true));

  const refused: [MessageStatus, MessageStatus][] = [
    ['SENT', 'PENDING'],
    ['DELIVERED', 'SENT'], // the worker records SENT after Meta's delivered receipt already arrived
    ['READ', 'DELIVERED'], // late delivered receipt
    ['READ', 'SENT'],
    ['DELIVERED', 'ERROR'], // failed after delivered contradicts the delivery
    ['READ', 'ERROR'],
    ['ERROR', 'SENT'],
    ['ERROR', 'DELIVERED'],
    ['ERROR', 'READ'],
    ['READ', 'READ'],
    ['SENT', 'SENT'],
    ['ERROR', 'ERROR'],
    ['RECEIVED', 'READ'],
    ['PENDING', 'RECEIVED'],
  ];
  it.each(refused)('%s -> %s does not move', (from, to) => expect(canMoveStatus(from, to)).toBe(false));

  it('maps provider receipts to stored statuses', () => {
    expect(['sent', 'delivered', 'read', 'failed'].map((s) => messageStatusOf(s as 'sent'))).toEqual([
      'SENT',
      'DELIVERED',
      'READ',
      'ERROR',
    ]);
  });
});
