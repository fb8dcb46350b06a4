export function Loading() {
  return (
    <p className="loading" role="status">
      Loading…
    </p>
  );
}
