// Type-checked (never run) by types.test.mjs: every documented use of the API must
// compile against npm/index.d.ts under --strict, and misuses must not.
import { AmnError, ERROR_CODES, diff, init, implementation, open, version } from '../../npm/index.js';
import type { ConvertResult, DiffResult, DType, ErrorCode, Model, ModelInfo, Progress, ShardedConvertResult, Tensor, TensorInfo } from '../../npm/index.js';

async function usage(file: File, files: File[], buffer: ArrayBuffer, stream: WritableStream<Uint8Array>): Promise<void> {
  await init();
  const v: string = await version();
  const impl: string = await implementation();
  const controller = new AbortController();

  const model: Model = await open(buffer, { limits: { maxItemCount: 1000, max_total_bytes: 1 << 30 }, name: 'a.safetensors' });
  await open(new Uint8Array(buffer));
  await open(file, { signal: controller.signal });
  await open(files);
  await open('https://example.com/model.safetensors.index.json', { fetch: (input, init) => fetch(input, init) });
  await open(new URL('https://example.com/model.safetensors'));
  await open('https://huggingface.co/org/repo/resolve/main/model.safetensors', { accessToken: 'hf_x', headers: { 'X-Request': '1' } });
  await open('https://example.com/model.safetensors', { headers: new Headers([['Authorization', 'Basic dTpw']]) });
  await open('https://huggingface.co/org/repo/tree/v1', { accessToken: 'hf_x' });
  await open('https://hub.example.org/org/repo', { hubEndpoint: 'https://hub.example.org' });
  {
    await using scoped = await open(buffer);
    console.log(scoped.info.format);
  }
  await model[Symbol.asyncDispose]();
  await open('/models/tiny');

  const compared: DiffResult = await diff(model, 'https://example.com/b.safetensors', { text: true, onProgress: (p) => p.done / p.total });
  const cos: number | null = compared.tensors[0].cosine;
  console.log(compared.identical, compared.tensors[0].status === 'only_in_b', cos, compared.text);

  const info: ModelInfo = model.info;
  const first: TensorInfo = info.tensors[0];
  const n: number = first.parameters + first.offset + first.nbytes + first.data_offsets[1] + first.file;
  const sharded: boolean = info.sharded;
  const index: string | null = info.index;
  const meta: Record<string, string> = info.metadata;
  const warnings: string[] = info.warnings;
  const bytesOfFirstFile: number = info.files[0].header_bytes + info.files[0].size;
  const share: number = info.dtypes[0].bytes + info.parameters + info.total_bytes + info.file_bytes;
  const text: string = model.text() + model.text('parse') + model.infoJson;

  const t: Tensor = await model.tensor('w', { to: 'bf16', signal: controller.signal });
  if (t.data instanceof Uint16Array) t.data[0] = 1;
  const shape: number[] = t.shape;
  const dq: Tensor = await model.dequantize('w');

  const blobOrBytes: Blob | Uint8Array = await model.convert({ dtype: 'bf16' });
  const onProgress = (p: Progress): void => { console.log(p.done / p.total); };
  const r: ConvertResult = await model.convert({ to: 'safetensors', dtype: 'f16', sink: stream, onProgress, signal: controller.signal });
  const r2: ConvertResult = await model.convert({ sink: 'out.safetensors', overwrite: true });
  const named: string = model.outputName({ to: 'gguf', dtype: 'f16' });
  void named;
  const written: number = r.bytes + r2.bytes;
  const path: string | undefined = r2.path;
  await model.convert({ dtype: null });
  // Sharded output: a folder path in Node, or a sink per file.
  const folder = await model.convert({ sink: 'out-bf16', dtype: 'bf16', shards: 'input', maxShardSize: '5GB' });
  const perFile: ShardedConvertResult = await model.convert({ openShard: (name: string) => (name.endsWith('.json') ? null : stream), maxShardSize: 1 << 30 });
  const shardNames: string[] = perFile.files.map((f) => f.name);
  const shardCount: number = perFile.shards;
  console.log(folder.bytes, shardNames, shardCount);
  await model.close();

  try {
    await open(buffer);
  } catch (err) {
    if (err instanceof AmnError) {
      const code: ErrorCode = err.code;
      const offset: number = err.offset;
      console.log(code, offset, err.message);
    }
  }
  const codes: readonly ErrorCode[] = ERROR_CODES;
  const pickleRefused: ErrorCode = 'disallowed_global';
  // GGUF block types and unknown GGUF type ids are dtypes of info.tensors too.
  const stored: DType[] = ['BF16', 'Q4_K', 'IQ2_XXS', 'MXFP4', 'type 57'];
  if (first.dtype === 'Q6_K') console.log(pickleRefused, stored);

  // docs/js-api.md, "Cancelling": an abort is an AbortError, its code in cause.
  try {
    await model.tensor('w', { signal: AbortSignal.timeout(1000) });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError' && err.cause instanceof AmnError) {
      const cancelled: ErrorCode = err.cause.code;
      console.log(cancelled);
    }
  }
  // docs/js-api.md, "Errors": the example as written there.
  try {
    await open(file);
  } catch (err) {
    if (err instanceof AmnError && err.code === 'parse') console.error(`broken at byte ${err.offset}: ${err.message}`);
    else throw err;
  }
  // docs/js-api.md, "Sharded output": a folder whose parent folders do not exist yet.
  await model.convert({ dtype: 'bf16', sink: 'out/llama-bf16' });
  console.log(v, impl, n, sharded, index, meta, warnings, bytesOfFirstFile, share, text, shape, dq, blobOrBytes, written, path, codes);
}

async function misuse(model: Model): Promise<void> {
  // @ts-expect-error: not a cast target
  await model.tensor('w', { to: 'q4' });
  // @ts-expect-error: only safetensors or gguf output
  await model.convert({ to: 'onnx' });
  // @ts-expect-error: shards is 'input' or 1
  await model.convert({ sink: 'out', shards: 3 });
  // @ts-expect-error: an access token is a string
  await open('https://example.com/m.safetensors', { accessToken: 42 });
  // @ts-expect-error: numbers are not sources
  await open(42);
  // @ts-expect-error: unknown error code
  const code: ErrorCode = 'oops';
  // @ts-expect-error: not a dtype
  const dtype: DType = 'Q4_Z';
  console.log(dtype);
  // @ts-expect-error: info is read-only
  model.info = null;
  console.log(code);
}

export { usage, misuse };
