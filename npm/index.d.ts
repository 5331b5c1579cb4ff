// Types for the anamnesis package (both the Node and the browser entry).
// Symbol.asyncDispose (Model's `await using`) is declared by this lib:
/// <reference lib="esnext.disposable" />

/** The core's stable error codes (docs/session-protocol.md). */
export type ErrorCode =
  | 'parse' | 'unsupported' | 'limit' | 'io' | 'need_bytes' | 'need_files' | 'exists'
  | 'invalid_argument' | 'not_found' | 'cancelled' | 'internal' | 'disallowed_global';

export declare const ERROR_CODES: readonly ErrorCode[];

/** Every failure: from the core (parse, limit, ...) or from I/O (io, exists). An aborted
 *  call rejects with a DOMException named 'AbortError' instead, this error ('cancelled')
 *  in its `cause`. */
export declare class AmnError extends Error {
  constructor(code: ErrorCode, message: string, options?: { offset?: number; cause?: unknown });
  readonly name: 'AmnError';
  code: ErrorCode;
  /** Byte offset in the file where the problem was found, or -1. */
  offset: number;
}

/** Parser bounds; the core's built-in floors apply whatever is passed. */
export interface Limits {
  maxSingleAlloc?: number;
  maxTotalBytes?: number;
  maxItemCount?: number;
  maxDecompressionRatio?: number;
  max_single_alloc?: number;
  max_total_bytes?: number;
  max_item_count?: number;
  max_decompression_ratio?: number;
}

/** Node only: a fs.promises FileHandle (structural, so this file needs no @types/node). */
export interface FileHandleLike {
  readonly fd: number;
  stat(): Promise<{ size: number }>;
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
}

/**
 * What open() reads. Strings starting with http:// or https:// are URLs (HTTP Range);
 * 'ollama:[namespace/]model[:tag]' is a model Ollama has pulled (Node only); other
 * strings are paths (Node only). An array is a set of Files: shards, the
 * *.index.json and the config files — config.json, quantize_config.json,
 * quant_config.json (e.g. a dropped folder).
 */
export type Source =
  | ArrayBuffer
  | ArrayBufferView
  | Blob
  | readonly Blob[]
  | URL
  | string
  | FileHandleLike;

export interface OpenOptions {
  limits?: Limits;
  /** Used for URL sources instead of the default transport (globalThis.fetch in browsers; node:http(s) with a keep-alive agent in Node). */
  fetch?: typeof globalThis.fetch;
  /** URL sources: headers sent with every request (the reader's own Range wins). */
  headers?: HeadersInit;
  /** URL sources: sent as `Authorization: Bearer <token>` with every request (a hub's token). */
  accessToken?: string;
  /** Where Hugging Face repository URLs (`<hubEndpoint>/ORG/REPO[/tree/REV]`) are
   *  recognised and listed through the Hub's API; default 'https://huggingface.co'. */
  hubEndpoint?: string;
  /** Aborting rejects with a DOMException named 'AbortError' whose `cause` is the
   *  AmnError 'cancelled' (as every option named signal here). */
  signal?: AbortSignal;
  /** File name for sources that have none (ArrayBuffer, Blob, FileHandle). */
  name?: string;
  /**
   * URL of an *.index.json: also fetch config.json, quantize_config.json and
   * quant_config.json beside it (default true; a 404 is ignored).
   */
  config?: boolean;
}

export type FloatTarget = 'bf16' | 'f16' | 'f32';

/** safetensors dtype spellings (also what NumPy, PyTorch and GGUF's plain types map to). */
export type SafetensorsDType =
  | 'BOOL' | 'U8' | 'I8' | 'F8_E5M2' | 'F8_E4M3' | 'F8_E8M0' | 'F8_E4M3FNUZ' | 'F8_E5M2FNUZ'
  | 'F4' | 'F6_E2M3' | 'F6_E3M2' | 'I16' | 'U16' | 'F16' | 'BF16' | 'I32' | 'U32' | 'F32'
  | 'C64' | 'F64' | 'I64' | 'U64';

/** GGUF block types (ggml's quantized types, named as gguf-py names them). */
export type GgmlBlockType =
  | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q8_0' | 'Q8_1'
  | 'Q2_K' | 'Q3_K' | 'Q4_K' | 'Q5_K' | 'Q6_K' | 'Q8_K'
  | 'IQ2_XXS' | 'IQ2_XS' | 'IQ2_S' | 'IQ3_XXS' | 'IQ3_S' | 'IQ1_S' | 'IQ1_M' | 'IQ4_NL' | 'IQ4_XS'
  | 'TQ1_0' | 'TQ2_0' | 'MXFP4' | 'NVFP4' | 'Q1_0' | 'Q2_0';

/**
 * What a tensor is stored as: a safetensors dtype, a GGUF block type, or `type N` for a
 * GGUF type id the core does not know (inspect lists it; reading it fails with
 * `unsupported`).
 */
export type DType = SafetensorsDType | GgmlBlockType | `type ${number}`;

export interface FileInfo {
  name: string;
  size: number;
  header_bytes: number;
}

export interface TensorHash {
  name: string;
  bytes: number;
  sha256: string;
  xxh64: string;
  sha1: string;
}

export interface ModelHash {
  /** true: over the values (each tensor as F32 little-endian, quantized weights dequantized), not the stored bytes. */
  dequantized: boolean;
  tensors: TensorHash[];
  /** Over every tensor's hashed bytes in order; uuid: llama.cpp gguf-hash's UUIDv5 of them. */
  model: { tensors: number; bytes: number; sha256: string; xxh64: string; sha1: string; uuid: string };
}

export interface TensorStats {
  name: string;
  /** As stored ('Q4_K' for a GGUF block type), or a quantized weight's scheme. */
  dtype: string;
  shape: number[];
  count: number;
  /** Over the finite values; null when there is none. */
  min: number | null;
  max: number | null;
  mean: number | null;
  std: number | null;
  nan: number;
  pos_inf: number;
  neg_inf: number;
  zeros: number;
  /** 20 (with `detail: true`: 64) equal bins over [min, max], finite values only. */
  histogram: { min: number | null; max: number | null; counts: number[] };
  /** Why the values are not described (complex, F8/F6/F4 as stored). */
  skipped?: string;
  /** With `text: true`: the lines `amn stats` prints. */
  text?: string;
  /** With `detail: true`: what the values are read as (F32, or an integer dtype as stored). */
  values_dtype?: string;
  /** With `detail: true`: the first 16 values (floats: numbers, or 'nan' / 'inf' / '-inf';
   *  64-bit integers: decimal strings); a skipped tensor: its first 16 stored bytes. */
  head?: Array<number | string>;
  /** With `detail: true`, 64-bit integers: the exact extremes, as decimal strings. */
  int_min?: string;
  int_max?: string;
  /** With `detail: true`, a skipped tensor: its stored bytes. */
  bytes?: number;
  /** With `detail: true`: a 2-D (or wider, as shape[0] × the rest) tensor in at most 256 × 256
   *  cells, row-major; each cell the mean |value| (abs) or mean value (signed) of the finite
   *  values it covers, null when it has none. null for fewer than two dimensions. */
  heatmap?: { rows: number; cols: number; cell_rows: number; cell_cols: number; abs: Array<number | null>; signed: Array<number | null> } | null;
}

export type DiffStatus = 'identical' | 'same_values' | 'different' | 'shape_mismatch' | 'only_in_a' | 'only_in_b' | 'not_compared';

/** One tensor of a comparison (docs/json-schema.md "The diff document"). The value fields
 *  are null when the values were not compared (a missing side, other shapes, not_compared). */
export interface TensorDiff {
  /** A's name (B's for a tensor only B has). */
  name: string;
  /** B's name, when matched through llama.cpp's GGUF <-> Hugging Face renaming. */
  name_b?: string;
  /** Matched with llama.cpp's q / k row permutation undone (llama GGUFs). */
  rows_permuted?: true;
  status: DiffStatus;
  /** As stored ('Q4_K', 'BF16', a quantized weight's scheme); null on the missing side. */
  dtype_a: string | null;
  dtype_b: string | null;
  shape_a: number[] | null;
  shape_b: number[] | null;
  /** Value pairs compared. */
  elements: number;
  equal: number | null;
  max_abs_diff: number | null;
  mae: number | null;
  rmse: number | null;
  cosine: number | null;
  /** null when infinite: +∞ when nothing differs (max_abs_diff 0), −∞ when A is all zeros. */
  snr_db: number | null;
  nonfinite: number | null;
  nonfinite_mismatch: number | null;
  skipped?: string;
}

export interface DiffResult {
  /** Every tensor identical (bit for bit) and none missing on either side. */
  identical: boolean;
  tensors: TensorDiff[];
  /** The GGUF side's architecture, when some tensors were matched through its names. */
  name_map?: string;
  /** With `text: true`: the table `amn diff` prints. */
  text?: string;
}

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  parameters: number;
  /** Index into ModelInfo.files. */
  file: number;
  /** Absolute byte offset in that file. */
  offset: number;
  /** As in the safetensors header (relative to the data section). */
  data_offsets: [number, number];
  nbytes: number;
  /** Elements stored big-endian (NPY '>', a big-endian torch archive); written little-endian. */
  big_endian?: true;
  /** Element strides of a view (torch) or Fortran-order array (NumPy); written row-major. */
  strides?: number[];
  /** A DEFLATE-compressed .npz entry; offset/nbytes are the compressed bytes. */
  compressed?: true;
  inflated_size?: number;
  /** The quantized weight this record is a part of (null: an activation scale, consumed). */
  part_of?: string | null;
  role?: string;
}

/** A quantized weight as a user means it: its parts are consumed on conversion. */
export interface LogicalTensorInfo {
  name: string;
  scheme: string;
  variant: string;
  /** [out_features, in_features] (nn.Linear), or [experts, out, in]. */
  shape: number[];
  parameters: number;
  /** What the producer's own dequantizer returns. */
  dtype: DType;
  stored_bytes: number;
  bits_per_weight: number;
  /** role -> record name */
  parts: Record<string, string>;
  /** The parts do not add up; converting this weight fails with this message. */
  error?: string;
}

export interface DTypeShare {
  dtype: DType;
  tensors: number;
  parameters: number;
  bytes: number;
}

/** The model-info document (docs/json-schema.md), the same as `amn inspect --json`. */
export interface ModelInfo {
  amn_info_version: number;
  format: string;
  sharded: boolean;
  index: string | null;
  files: FileInfo[];
  metadata: Record<string, string>;
  config: Record<string, unknown> | null;
  /**
   * The quantizer's own config beside the model (AutoGPTQ / GPTQModel's
   * quantize_config.json, else AutoAWQ's quant_config.json), as written. When present it
   * is what scheme detection reads, as GPTQModel does; a disagreement with config.json's
   * quantization_config is a warning.
   */
  quantize_config: { file: 'quantize_config.json' | 'quant_config.json'; config: Record<string, unknown> } | null;
  /** Problems that did not stop parsing (e.g. an unreadable config.json). */
  warnings: string[];
  tensors: TensorInfo[];
  /** Quantized weights found by scheme detection (empty when none). */
  logical: LogicalTensorInfo[];
  /** Format-specific facts (GGUF header, pickle verdict, ...), or null. */
  details: Record<string, unknown> | null;
  /** Quantization-aware: a quantized weight counts its logical elements once. */
  parameters: number;
  total_bytes: number;
  file_bytes: number;
  dtypes: DTypeShare[];
}

/** Values typed by dtype; BF16 and F16 are raw 16-bit patterns. Other dtypes: bytes. */
export type TensorData = Uint16Array | Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;

export interface Tensor {
  name: string;
  dtype: DType;
  shape: number[];
  data: TensorData;
}

export interface TensorOptions {
  /**
   * Cast floating tensors to this type. Omitted: floats keep their stored dtype, GGUF
   * block types (Q4_K, ...) come back as F32 (exactly ggml's to_float), quantized
   * weights in the dtype their producer's dequantizer returns.
   */
  to?: FloatTarget;
  signal?: AbortSignal;
}

export interface Progress {
  /** Output bytes written so far (header included). */
  done: number;
  /** Output bytes in all. */
  total: number;
}

/** Node only: a stream.Writable (structural). */
export interface NodeWritableLike {
  write(chunk: Uint8Array): boolean;
  end(): unknown;
  once(event: string, listener: (...args: any[]) => void): unknown;
  on(event: string, listener: (...args: any[]) => void): unknown;
  off(event: string, listener: (...args: any[]) => void): unknown;
}

/** A WritableStream, or in Node a path (string or file: URL) or a stream.Writable. */
export type Sink = WritableStream<Uint8Array> | string | URL | NodeWritableLike;

export interface ConvertOptions {
  /** Output format (default 'safetensors'). */
  to?: 'safetensors' | 'gguf';
  /** Cast floating tensors and dequantize quantized weights to this type; omitted keeps
   *  every dtype (quantized weights: the producer's own dequantized dtype). */
  dtype?: FloatTarget | null;
  /** Quantized models: cast the unquantized tensors (norms, embeddings) to `dtype` too. */
  castAll?: boolean;
  /** GGUF output: CLI-style "key[:TYPE]=value" strings, applied after ggufMetadata. */
  ggufKv?: string[];
  /** GGUF output: {key: value | {type, value}}, or that object as JSON text. */
  ggufMetadata?: Record<string, unknown> | string;
  /** Node path sinks: replace an existing file or folder (otherwise AmnError 'exists'). */
  overwrite?: boolean;
  /** Node path and folder sinks: `false` skips the fsyncs, for scratch outputs. The output
   *  is still written to a temporary name and renamed into place (atomic against readers
   *  and against this process failing); only a crash of the machine may lose or tear it.
   *  Default true (durable). */
  sync?: boolean;
  /** The native CLI's --threads: checked (a positive integer) and accepted, but this
   *  package's WASM core has no threads and runs one piece at a time. */
  threads?: number;
  /** Safetensors output of a sharded model: 'input' keeps the input's shard boundaries
   *  (the default where the destination can hold several files: `openShard`, or a Node
   *  folder path); 1 writes one file. */
  shards?: 'input' | 1;
  /** Re-shard by size, as transformers' max_shard_size: bytes, or "5GB" / "500MiB". */
  maxShardSize?: number | string;
  /** GGUF output split as llama.cpp's gguf-split --split-max-size: bytes, or "2G" / "500M";
   *  a folder of <name>-00001-of-00003.gguf files (through `openShard`, or a Node folder). */
  splitMaxSize?: number | string;
  /** GGUF output split as gguf-split --split-max-tensors: at most this many tensors a file. */
  splitMaxTensors?: number;
  /** GGUF output of a split GGUF input: one file per input file, as llama-quantize --keep-split
   *  (a folder of <name>-00001-of-00003.gguf files). */
  keepSplit?: boolean;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

/** Opens the sink for one file of a sharded output ("model-00001-of-00003.safetensors",
 *  "model.safetensors.index.json"). null/undefined collects it (a Blob in browsers, a
 *  Uint8Array in Node), returned in ShardedConvertResult.files[].output. */
export type OpenShard = (name: string) => Sink | null | undefined | Promise<Sink | null | undefined>;

export interface ShardedConvertResult extends ConvertResult {
  /** Bytes of the shard files (headers included; not the index). */
  bytes: number;
  /** How many shard files (the index is not one). */
  shards: number;
  /** Every file written, shards first, then the index when there is more than one shard. */
  files: { name: string; bytes: number; output: ConvertResult | Blob | Uint8Array }[];
  /** The index's file name, when one was written. */
  index?: string;
  /** The folder, for a Node folder path sink. */
  path?: string;
}

export interface ConvertResult {
  /** Bytes written. */
  bytes: number;
  /** Tensors written (a quantized weight counts once). */
  tensors: number;
  /** The final path, for a path sink. */
  path?: string;
}

/** The schemes forget() writes (docs/cli.md "Forget"). */
export type ForgetScheme = 'nf4' | 'fp4' | 'int8' | 'fp8-block' | 'fp8-channel' | 'fp8-tensor' | 'mxfp4' | 'nvfp4' | 'mlx';

/** The ggml types forget({ to: 'gguf' }) writes (any case). */
export type GgufForgetType = 'F16' | 'BF16' | 'Q8_0' | 'Q4_0' | 'Q4_1' | 'Q5_0' | 'Q5_1' | 'Q2_K' | 'Q3_K' | 'Q4_K' |
  'Q5_K' | 'Q6_K' | 'IQ4_NL' | 'IQ4_XS' | 'IQ3_S' | 'IQ3_XXS' | 'IQ2_S' | 'IQ1_M' | 'TQ1_0' | 'TQ2_0' | 'MXFP4' |
  'NVFP4' | 'Q1_0' | 'Q2_0';
/** llama-quantize's file types that are no ggml type's name (docs/cli.md "Forget to GGUF"). */
export type GgufFileType = 'Q4_K_M' | 'Q4_K_S' | 'Q5_K_M' | 'Q5_K_S' | 'Q3_K_S' | 'Q3_K_M' | 'Q3_K_L' | 'Q2_K_S' |
  'IQ3_M' | 'IQ3_XS' | 'IQ2_M' | 'MXFP4_MOE';

export interface ForgetOptions {
  /** What to quantize to, as its producer would (required unless `like` is given); with
   *  `to: 'gguf'` a llama-quantize file type (its per-tensor mix), or with `pure` a ggml type. */
  scheme?: ForgetScheme | GgufForgetType | Lowercase<GgufForgetType> | GgufFileType | Lowercase<GgufFileType>;
  /** 'gguf': one GGUF file, blocks as ggml_quantize_chunk writes them (default 'safetensors'). */
  to?: 'safetensors' | 'gguf';
  /** GGUF: llama-quantize --pure (every quantizable tensor gets `scheme`, a ggml type). */
  pure?: boolean;
  /** GGUF: llama-quantize's --output-tensor-type (a ggml type name for output.weight). */
  outputTensorType?: string;
  /** GGUF: llama-quantize's --token-embedding-type (a ggml type name for token_embd.weight). */
  tokenEmbeddingType?: string;
  /** GGUF: llama-quantize's --leave-output-tensor (output.weight kept as stored). */
  leaveOutputTensor?: boolean;
  /** GGUF: llama-quantize's --tensor-type: 'NAME=TYPE' or a list (NAME a regular expression
   *  searched in tensor names, TYPE a ggml type; the first that matches wins). */
  tensorType?: string | string[];
  /** GGUF: llama-quantize's --tensor-type-file: such entries separated by spaces or
   *  newlines (after `tensorType`'s), as bytes, a Blob / File, or in Node a path or file: URL. */
  tensorTypeFile?: Uint8Array | ArrayBuffer | Blob | string | URL;
  /** GGUF: llama.cpp's importance matrix (llama-quantize --imatrix): the GGUF or legacy .dat
   *  file's bytes, a Blob / File, or in Node a path or file: URL. */
  imatrix?: Uint8Array | ArrayBuffer | Blob | string | URL;
  /** GGUF: the name recorded in quantize.imatrix.file for `imatrix` given as bytes
   *  (default: the path as given, the File's name, or 'imatrix'). */
  imatrixName?: string;
  /** GGUF, with `imatrix`: use the matrix only for the tensors whose names contain one of
   *  these (llama-quantize --include-weights). Not with `excludeWeights`. */
  includeWeights?: string[];
  /** GGUF, with `imatrix`: do not use the matrix for the tensors whose names contain one
   *  of these (llama-quantize --exclude-weights). */
  excludeWeights?: string[];
  /** GGUF: llama-quantize --allow-requantize (quantized tensors go through F32). */
  allowRequantize?: boolean;
  /** GGUF: KVs to set, as convert's. */
  ggufKv?: string[];
  /** GGUF: KVs as JSON ({key: value} or {key: {type, value}}), as convert's. */
  ggufMetadata?: string | Record<string, unknown>;
  /** nf4 / fp4: elements per absmax block, a power of two from 32 to 4096 (default 64). */
  blocksize?: number;
  /** nf4 / fp4: quantize the absmax too (bitsandbytes' compress_statistics). */
  doubleQuant?: boolean;
  /** nf4 / fp4 with doubleQuant: torch's thread count in the run to match (its absmax
   *  mean's last bits depend on it from 32768 blocks on; default 1). */
  torchThreads?: number;
  /** mlx: bits per weight, 2, 3, 4, 5, 6 or 8 (default 4). */
  bits?: 2 | 3 | 4 | 5 | 6 | 8;
  /** mlx: weights per scale and bias, 32, 64 or 128 (default 64). */
  groupSize?: 32 | 64 | 128;
  /** mlx: mx.quantize's mode (default 'affine'); mxfp4 (4 bits, group 32), nvfp4 (4 bits, group 16) and mxfp8
   *  (8 bits, group 32) take only their own bits and group size. */
  mode?: 'affine' | 'mxfp4' | 'nvfp4' | 'mxfp8';
  /** Name globs kept as stored. */
  skip?: string | string[];
  /** Name globs quantized instead of the producer's own choice. */
  only?: string | string[];
  /** Fail when a chosen tensor cannot be quantized (else it is kept, with a warning). */
  strict?: boolean;
  /** A quantized reference (an open Model): its scheme, settings and set of quantized
   *  weights; `scheme` may be left out. */
  like?: Model;
  /** With `like`: its scales too (forget(remember(REF)) gives REF's bytes back). */
  reuseScales?: boolean;
  /** A folder output's model: 'input' keeps the input's shards (the default), 1 one file. */
  shards?: 'input' | 1;
  /** A folder output's model re-sharded by size (a weight and its companions stay together). */
  maxShardSize?: number | string;
  /** GGUF: split as gguf-split --split-max-size (a folder of files). */
  splitMaxSize?: number | string;
  /** GGUF: split as gguf-split --split-max-tensors. */
  splitMaxTensors?: number;
  /** GGUF of a split GGUF input: one file per input file (llama-quantize --keep-split). */
  keepSplit?: boolean;
  /** GGUF: leave out these layers (blk.N), renumber the later ones and set block_count
   *  (llama-quantize --prune-layers; [1, 5] or "1,5"). */
  pruneLayers?: number[] | string;
  overwrite?: boolean;
  sync?: boolean;
  /** The native CLI's --threads: checked (a positive integer) and accepted, but this
   *  package's WASM core has no threads and runs one piece at a time. */
  threads?: number;
  onProgress?: (progress: Progress) => void;
  signal?: AbortSignal;
}

/** What forgetting lost: one entry per input tensor, and the model (docs/json-schema.md). */
export interface LetheStats {
  mae: number; rmse: number; max_abs_error: number;
  /** null: an exact copy (infinite SNR). */
  snr_db: number | null;
  cosine: number; non_finite: number;
}
export interface LetheTensor extends Partial<LetheStats> {
  name: string; shape: number[]; dtype: DType; quantized: boolean;
  bytes_before: number; bytes_after: number; bits_before: number; bits_after: number;
  /** Kept tensors: why (the producer's rule, --skip, or a warning's reason). */
  kept_because?: string;
}
export interface LetheReport {
  scheme: string;
  tensors: LetheTensor[];
  model: LetheStats & { quantized: number; kept: number; bytes_before: number; bytes_after: number;
    bytes_saved: number; bits_before: number; bits_after: number };
  warnings: string[];
}

export interface ForgetResult {
  /** Bytes of the model file (headers included). */
  bytes: number;
  tensors: number;
  /** The parsed report, the JSON text `amn forget --json` prints, and the CLI's table. */
  lethe: LetheReport;
  letheJson: string;
  letheText: string;
  /** A folder output: its files (model.safetensors, config.json). */
  files?: { name: string; bytes: number; output: ConvertResult | Blob | Uint8Array }[];
  /** The final path, for a Node path sink. */
  path?: string;
  /** Without a path sink: what the sink returned (a Blob in browsers, a Uint8Array in Node). */
  output?: Blob | Uint8Array | ConvertResult;
}

export declare class Model {
  private constructor();
  /** The parsed model-info document. */
  readonly info: ModelInfo;
  /** The same document as the core wrote it: the bytes `amn inspect --json` prints. */
  readonly infoJson: string;
  /** What another model's forget({ like: this }) writes (pass it as `to`): 'gguf' for a GGUF. */
  readonly likeFormat: 'safetensors' | 'gguf';
  /** The CLI's human-readable report. */
  text(kind?: 'inspect' | 'parse'): string;
  /** One tensor's values (AmnError 'not_found' if absent). */
  tensor(name: string, options?: TensorOptions): Promise<Tensor>;
  /** One tensor's value statistics, streamed through the core (docs/json-schema.md "The stats document"). */
  stats(name: string, options?: { signal?: AbortSignal; text?: boolean; detail?: boolean;
    onProgress?: (p: { done: number; total: number }) => void }): Promise<TensorStats>;
  /** SHA-256, XXH64 and SHA-1 of every stored tensor and of the whole model, and gguf-hash's UUID;
   *  dequantized: of the values (each tensor as F32, as tensor(name, {to: 'f32'}) gives it) instead. */
  hash(options?: { signal?: AbortSignal; dequantized?: boolean }): Promise<ModelHash>;
  /** The tensors `amn stats` describes when none is named. */
  readonly statsNames: string[];
  /** tensor() under another name: without `to`, the stored dtype (a quantized weight: its natural one). */
  dequantize(name: string, options?: TensorOptions): Promise<Tensor>;
  /** A sharded safetensors output: each file through `openShard`. */
  convert(options: ConvertOptions & { openShard: OpenShard; sink?: undefined }): Promise<ShardedConvertResult>;
  /** Streams the converted model into `sink`. In Node, a folder path (not ending in
   *  .safetensors) for a sharded model, `shards: 'input'` or `maxShardSize` writes the
   *  shards and the index into that folder atomically: a ShardedConvertResult. */
  convert(options: ConvertOptions & { sink: Sink }): Promise<ConvertResult | ShardedConvertResult>;
  /** Without a sink: the whole file, as a Blob (browser) or a Uint8Array (Node). */
  convert(options?: ConvertOptions & { sink?: undefined }): Promise<Blob | Uint8Array>;
  /** Quantizes the model as the scheme's producer would, streamed: into `sink` (one
   *  safetensors file; in Node a folder path not ending in .safetensors writes the folder
   *  with config.json), or each file of that folder through `openShard`. */
  forget(options: ForgetOptions & { sink?: Sink; openShard?: OpenShard }): Promise<ForgetResult>;
  /** The default output name both CLIs give this conversion: "<stem>-bf16.safetensors";
   *  `verb: 'remember'` names what `amn remember` writes ("<stem>.safetensors" losslessly
   *  from a file that is not safetensors); `scheme`: what forget({ scheme }) writes to one sink. */
  outputName(options?: { to?: 'safetensors' | 'gguf'; dtype?: 'bf16' | 'f16' | 'f32'; castAll?: boolean;
    verb?: 'convert' | 'remember'; sharded?: boolean; scheme?: ForgetScheme | GgufForgetType }): string;
  /** What convert(), remember or forget ({ scheme }) to a path writes by default, as both
   *  CLIs decide it: a folder (`folder: true`: a sharded safetensors input, `shards: 'input'`,
   *  `maxShardSize`, a GGUF split; forget's folder with config.json) or one file; `sharded`:
   *  the folder's model may be several files; `name`: its default name. */
  outputLayout(options?: { to?: 'safetensors' | 'gguf'; dtype?: 'bf16' | 'f16' | 'f32'; castAll?: boolean;
    verb?: 'convert' | 'remember' | 'forget'; scheme?: string; shards?: 'input' | 1; maxShardSize?: number | string;
    splitMaxSize?: number | string; splitMaxTensors?: number; keepSplit?: boolean }): { folder: boolean; sharded: boolean; name: string };
  /** Frees the core session and closes files. */
  close(): Promise<void>;
  /** close(), for `await using model = await open(…)`. */
  [Symbol.asyncDispose](): Promise<void>;
}

/** Parses the model's headers (never its tensor data) and returns a Model. */
export declare function open(source: Source, options?: OpenOptions): Promise<Model>;

/** Compares two models (open Models, or sources open() takes) tensor by tensor, both read
 *  piece by piece (docs/js-api.md "diff"). Models opened here are closed afterwards. */
export declare function diff(a: Model | Source, b: Model | Source, options?: {
  limits?: OpenOptions['limits']; signal?: AbortSignal; text?: boolean;
  /** Match plain names only (`amn diff --exact-names`): no GGUF <-> Hugging Face renaming. */
  exactNames?: boolean;
  onProgress?: (p: { done: number; total: number }) => void;
}): Promise<DiffResult>;

/** The schemes forget() knows, from the core (docs/cli.md "Forget"); `available` false:
 *  named, not built yet. */
export declare function forgetSchemes(): Promise<{ name: string; producer: string; available: boolean; to?: 'gguf'; pure?: true; imatrix?: boolean }[]>;

/** The core's version string (loads the WASM module). */
export declare function version(): Promise<string>;

/** Loads the WASM module now rather than on the first open(). */
export declare function init(options?: { wasmBinary?: ArrayBuffer | Uint8Array; wasmUrl?: string | URL }): Promise<void>;

/** The name of the kernel implementation the WASM core runs (e.g. for `amn --version`). */
export declare function implementation(): Promise<string>;
