/** True for a unique-constraint violation (SQLSTATE 23505), as both drivers report it. */
export function isUniqueViolation(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}
