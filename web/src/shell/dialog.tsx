import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { errorMessage } from '../api/client';
import styles from './dialog.module.css';
import { ErrorNote } from './error-note';

/**
 * A modal dialog opened by its button: the browser's own <dialog>, which keeps the focus inside, closes
 * on Escape and gives the focus back to the button. Its content is there only while it is open, so each
 * opening starts afresh.
 */
export function Dialog({
  label,
  title,
  danger,
  onOpen,
  children,
}: {
  /** The opening button's content (its accessible name). */
  label: ReactNode;
  title: string;
  danger?: boolean;
  onOpen?: () => void;
  children: (close: () => void) => ReactNode;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const id = useId();
  const close = () => setOpen(false);
  useEffect(() => {
    const dialog = ref.current;
    if (open && dialog && !dialog.open) dialog.showModal();
    if (!open && dialog?.open) dialog.close();
  }, [open]);
  return (
    <>
      <button
        className={`button ${danger ? styles.danger : ''}`}
        type="button"
        aria-haspopup="dialog"
        onClick={() => {
          setOpen(true);
          onOpen?.();
        }}
      >
        {label}
      </button>
      <dialog ref={ref} className={styles.dialog} aria-labelledby={id} onClose={close}>
        <h2 id={id}>{title}</h2>
        {open && <div className={styles.body}>{children(close)}</div>}
      </dialog>
    </>
  );
}

/** A dialog's foot: the error of its action, Cancel, and the action (red when it destroys). */
export function DialogActions({
  close,
  action,
  onAction,
  error,
  danger,
  disabled,
  pending,
}: {
  close: () => void;
  action: string;
  onAction: () => void;
  error?: string;
  danger?: boolean;
  disabled?: boolean;
  pending?: boolean;
}) {
  return (
    <>
      <ErrorNote message={error} />
      <div className={styles.actions}>
        <button className="button" type="button" onClick={close}>
          Cancel
        </button>
        <button
          className={`button ${danger ? styles.dangerPrimary : 'button-primary'}`}
          type="button"
          disabled={disabled || pending}
          aria-busy={pending}
          onClick={onAction}
        >
          {action}
        </button>
      </div>
    </>
  );
}

/**
 * A confirmation of a destructive action: `onConfirm` answers the error to show, or nothing, and the
 * dialog closes. `ready` false keeps the action off (while what it says is still loading).
 */
export function ConfirmDialog({
  label,
  title,
  action,
  onOpen,
  onConfirm,
  ready = true,
  error,
  children,
}: {
  label: ReactNode;
  title: string;
  action: string;
  onOpen?: () => void;
  onConfirm: () => Promise<string | undefined>;
  ready?: boolean;
  /** An error of what the dialog shows (not of its action). */
  error?: string;
  children: ReactNode;
}) {
  return (
    <Dialog label={label} title={title} danger onOpen={onOpen}>
      {(close) => (
        <Confirm close={close} action={action} onConfirm={onConfirm} ready={ready} error={error}>
          {children}
        </Confirm>
      )}
    </Dialog>
  );
}

function Confirm({
  close,
  action,
  onConfirm,
  ready,
  error,
  children,
}: {
  close: () => void;
  action: string;
  onConfirm: () => Promise<string | undefined>;
  ready: boolean;
  error?: string;
  children: ReactNode;
}) {
  const [pending, setPending] = useState(false);
  const [failed, setFailed] = useState<string>();
  const confirm = async () => {
    setPending(true);
    setFailed(undefined);
    const failure = await onConfirm().catch((reason: unknown) => errorMessage(reason));
    setPending(false);
    if (failure) setFailed(failure);
    else close();
  };
  return (
    <>
      {children}
      <DialogActions
        close={close}
        action={action}
        onAction={() => void confirm()}
        error={failed ?? error}
        danger
        disabled={!ready}
        pending={pending}
      />
    </>
  );
}
