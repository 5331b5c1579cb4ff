// The page's side of the worker protocol (see worker.js): each request is a job with a
// promise, an optional progress callback, and cancel().

export class CoreClient {
  constructor() {
    this.worker = new Worker(new URL('./worker.js', import.meta.url), { type: 'module' });
    this.jobs = new Map();
    this.nextId = 1;
    this.worker.addEventListener('message', (event) => this.onMessage(event.data));
    // A worker that cannot load (a missing or blocked module) fails every job it holds.
    this.worker.addEventListener('error', (event) => {
      event.preventDefault();
      this.failAll({ code: 'internal', message: `The worker failed: ${event.message || 'it could not be loaded'}.`, offset: -1 });
    });
    this.worker.addEventListener('messageerror', () => {
      this.failAll({ code: 'internal', message: 'A message from the worker could not be read.', offset: -1 });
    });
  }

  // Returns { promise, cancel }. `promise` rejects with { code, message, offset }.
  request(type, payload = {}, { onProgress } = {}) {
    const id = this.nextId;
    this.nextId += 1;
    const promise = new Promise((resolve, reject) => {
      this.jobs.set(id, { resolve, reject, onProgress });
    });
    this.worker.postMessage({ type, id, ...payload });
    return { promise, cancel: () => this.worker.postMessage({ type: 'cancel', id }) };
  }

  onMessage(message) {
    const job = this.jobs.get(message.id);
    if (!job) return;
    if (message.type === 'progress') {
      job.onProgress?.(message);
      return;
    }
    this.jobs.delete(message.id);
    if (message.type === 'result') job.resolve(message.value);
    else job.reject(message.error);
  }

  failAll(error) {
    for (const job of this.jobs.values()) job.reject(error);
    this.jobs.clear();
  }
}
