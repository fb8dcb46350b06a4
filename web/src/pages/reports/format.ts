// How a report's values read: by their column's unit, so a column the API adds needs no page change.
import type { Value } from './report-api';

const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];

const CHANNEL_NAMES: Record<string, string> = {
  whatsapp: 'WhatsApp',
  whatsapp_web: 'WhatsApp Web',
  instagram: 'Instagram',
  messenger: 'Messenger',
  tiktok: 'TikTok',
  email: 'Email',
  sms: 'SMS',
  web_embed: 'Website widget',
  hubspot_chat: 'HubSpot chat',
  voice: 'Voice',
};

/** Names of the values of text columns that the API sends as codes. */
const VALUE_NAMES: Record<string, Record<string, string>> = {
  channel: CHANNEL_NAMES,
  answered_first_by: { ai: 'AI', person: 'Person', all: 'All' },
};

export const CHANNELS = Object.keys(CHANNEL_NAMES);

export function channelName(channel: string): string {
  return CHANNEL_NAMES[channel] ?? channel;
}

/** A duration as a person reads it: "45 s", "12 min", "1 h 5 min", "2 d 3 h". */
export function formatDuration(seconds: number): string {
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const minutes = Math.round(s / 60);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 ? `${hours} h ${minutes % 60} min` : `${hours} h`;
  const days = Math.floor(hours / 24);
  return hours % 24 ? `${days} d ${hours % 24} h` : `${days} d`;
}

export function weekdayName(isoWeekday: number): string {
  return WEEKDAYS[isoWeekday - 1] ?? String(isoWeekday);
}

export function hourName(hour: number): string {
  return `${String(hour).padStart(2, '0')}:00`;
}

const numbers = new Intl.NumberFormat('en');
const percent = new Intl.NumberFormat('en', { style: 'percent', maximumFractionDigits: 1 });

/** A value of a column as the tables show it; a missing figure (no conversation to measure) is a dash. */
export function formatValue(value: Value | undefined, unit: string, key = ''): string {
  if (value === null || value === undefined || value === '') return '–';
  if (typeof value === 'number') {
    switch (unit) {
      case 'seconds':
        return formatDuration(value);
      case 'ratio':
        return percent.format(value);
      case 'weekday':
        return weekdayName(value);
      case 'hour':
        return hourName(value);
      case 'count':
      case 'tokens':
        return numbers.format(value);
      default:
        return String(value);
    }
  }
  return VALUE_NAMES[key]?.[value] ?? value;
}

/** Whether a column holds figures (aligned right in tables, drawn in charts) rather than names. */
export function isFigure(unit: string): boolean {
  return unit === 'count' || unit === 'seconds' || unit === 'ratio' || unit === 'tokens';
}
