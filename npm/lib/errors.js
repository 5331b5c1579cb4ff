// AmnError: every failure the package reports, from the core or from JS-side I/O,
// carries one of the core's stable codes so callers can branch on `.code`.

// ERROR_CODES: every stable code, the core's list (errorCodes()) as the build wrote it
// beside the module (tools/write-error-codes.mjs); the ErrorCode type is index.d.ts's.
export { ERROR_CODES } from '../dist/error-codes.js';

export class AmnError extends Error {
  constructor(code, message, { offset = -1, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'AmnError';
    this.code = code;
    this.offset = offset;
  }
}

// A status object from the core ({ ok:false, code, message, offset }) as an AmnError.
export function errorFromStatus(status) {
  const offset = typeof status.offset === 'number' ? status.offset : -1;
  return new AmnError(status.code || 'internal', status.message || 'unknown error', { offset });
}

// Aborting rejects as web APIs do: a DOMException named AbortError. Its cause is the
// AmnError (code 'cancelled', whose own cause is the signal's reason), so a caller that
// branches on codes still finds one: err.cause.code.
export function cancelledError(signal) {
  const err = new DOMException('cancelled', 'AbortError');
  Object.defineProperty(err, 'cause', {
    value: new AmnError('cancelled', 'cancelled', { cause: signal?.reason }), writable: true, configurable: true,
  });
  return err;
}

// The AmnError an error carries: itself, or an AbortError's cause.
export function amnErrorOf(err) {
  if (err instanceof AmnError) return err;
  return err?.name === 'AbortError' && err.cause instanceof AmnError ? err.cause : null;
}

export function throwIfAborted(signal) {
  if (signal?.aborted) throw cancelledError(signal);
}

// fetch() and friends reject with DOMException 'AbortError' on abort; map that to
// 'cancelled' and everything else that is not already an AmnError to 'io'.
export function asIoError(err, what, signal, hint = '') {
  if (err instanceof AmnError) return err;
  if (signal?.aborted || err?.name === 'AbortError') return cancelledError(signal);
  const detail = err?.cause?.message || err?.message || String(err);
  return new AmnError('io', `${what}: ${detail}${hint}`, { cause: err });
}
