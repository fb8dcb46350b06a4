import { describe, expect, it } from 'vitest';
import { newId } from '../../../src/lib/ids.ts';
import type { DomainEvent } from '../../../src/modules/domain-events/domain-events.types.ts';
import { announcedBusiness, announcedEvents, announcements, liveEvent } from '../../../src/modules/live/live.events.ts';

// The announcements of a batch: per business, in the batch's order, each payload under PostgreSQL's
// NOTIFY limit (8 000 bytes), and read back to exactly what the stream sends.

const businesses = [newId(), newId()];
let id = 0;
const event = (businessId: string, data: Record<string, unknown>): DomainEvent => ({
  id: ++id,
  businessId,
  type: 'conversation_changed',
  conversationId: newId(),
  subjectId: newId(),
  data,
  createdAt: '2026-01-01T00:00:00.000001Z',
});

describe('announcements', () => {
  it('split a batch per business into payloads under the NOTIFY limit, read back whole and in order', () => {
    // Multi-byte text counts in bytes, not characters.
    const batch = Array.from({ length: 400 }, (_, i) =>
      event(businesses[i % 3 === 0 ? 1 : 0], { change: 'alert', note: 'ñandú '.repeat(i % 50) }),
    );
    const payloads = announcements(batch);
    expect(payloads.length).toBeGreaterThan(2);
    for (const payload of payloads) expect(Buffer.byteLength(payload)).toBeLessThan(8000);
    for (const businessId of businesses) {
      const read = payloads.filter((p) => announcedBusiness(p) === businessId).flatMap(announcedEvents);
      expect(read).toEqual(batch.filter((e) => e.businessId === businessId).map(liveEvent));
    }
  });

  it('leave out data too large to apply, so one event always fits: the client reloads its subject', () => {
    const large = event(businesses[0], { note: 'x'.repeat(3000) });
    const small = event(businesses[0], { note: 'x'.repeat(100) });
    expect(liveEvent(large).data).toBeNull();
    expect(liveEvent(small).data).toEqual(small.data);
    const payloads = announcements([large, small]);
    expect(payloads).toHaveLength(1);
    expect(announcedEvents(payloads[0]).map((e) => e.id)).toEqual([large.id, small.id]);
  });
});
