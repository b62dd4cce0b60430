/**
 * The hash of a weights export (`<export_dir>/v<N>/*.safetensors`), computed
 * from the files alone, not from anything the trainer reports: the exactly-once
 * checks compare it between a faulted run and the fault-free run of the same
 * seed. It covers each tensor's name, dtype, shape and raw bytes, tensors in
 * name order across every file, so two exports hash equal exactly when they
 * hold the same tensors bit for bit, whatever the file split, the header's
 * key order or its metadata.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface TensorEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

/** The tensors of one safetensors file: an 8-byte little-endian header length, a JSON header, then the data. */
function tensorsOf(file: string): Map<string, { dtype: string; shape: number[]; bytes: Buffer }> {
  const buf = readFileSync(file);
  if (buf.length < 8) throw new Error(`${file}: not a safetensors file (${buf.length} bytes)`);
  const headerLength = Number(buf.readBigUInt64LE(0));
  if (8 + headerLength > buf.length) throw new Error(`${file}: not a safetensors file (header length ${headerLength} past the end)`);
  const header = JSON.parse(buf.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, TensorEntry | Record<string, string>>;
  const data = buf.subarray(8 + headerLength);
  const out = new Map<string, { dtype: string; shape: number[]; bytes: Buffer }>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const { dtype, shape, data_offsets: [start, end] } = entry as TensorEntry;
    if (end > data.length || start > end) throw new Error(`${file}: tensor ${name} has data offsets [${start}, ${end}] outside the ${data.length} data bytes`);
    out.set(name, { dtype, shape, bytes: data.subarray(start, end) });
  }
  return out;
}

/** sha256 over the tensors of every *.safetensors file in `dir`, in tensor-name order (see the module comment). */
export function weightsHash(dir: string): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.safetensors')).sort();
  if (files.length === 0) throw new Error(`${dir} holds no *.safetensors files`);
  const tensors = new Map<string, { dtype: string; shape: number[]; bytes: Buffer }>();
  for (const f of files) {
    for (const [name, t] of tensorsOf(path.join(dir, f))) {
      if (tensors.has(name)) throw new Error(`${dir}: tensor ${name} is in more than one file`);
      tensors.set(name, t);
    }
  }
  const h = createHash('sha256');
  for (const name of [...tensors.keys()].sort()) {
    const t = tensors.get(name)!;
    // Lengths first, so no two different sequences of fields hash the same byte stream.
    const meta = Buffer.from(JSON.stringify([name, t.dtype, t.shape, t.bytes.length]));
    h.update(Buffer.from(String(meta.length).padStart(10, '0'))).update(meta).update(t.bytes);
  }
  return h.digest('hex');
}
