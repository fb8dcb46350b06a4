/** A call's error as a page shows it: announced, in the service's words; nothing without one. */
export function ErrorNote({ message }: { message?: string }) {
  if (!message) return null;
  return (
    <p className="error-note" role="alert">
      {message}
    </p>
  );
}
