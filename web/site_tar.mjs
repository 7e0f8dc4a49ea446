// site_tar.mjs — owns writing a gzipped ustar archive (the host's site-packages: numpy, its bytecode, the onnxide
// wheel, as .ci/setup_web.sh packs them) into Pyodide's file system, in JavaScript: faster than unpacking wheels in
// Python at page load.

/** The bytes of a gzip stream, decompressed by the platform (DecompressionStream: browsers, Node.js 18+); bytes
 * without gzip's magic number as they are (a server that sent the file with Content-Encoding: gzip). */
export async function gunzip(bytes) {
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return bytes;
  const inflate = new DecompressionStream('gzip');
  const writer = inflate.writable.getWriter();
  writer.write(bytes).catch(() => {});  // (a corrupt stream rejects here and on the reading side, reported there)
  writer.close().catch(() => {});
  return new Uint8Array(await new Response(inflate.readable).arrayBuffer());
}

const utf8 = new TextDecoder();
const text = (b, from, len) => {
  let end = from;
  while (end < from + len && b[end] !== 0) end++;
  return utf8.decode(b.subarray(from, end));
};

/** Writes every regular file of ustar archive `tar` under `dir` (folders made as needed). */
export function writeTar(FS, tar, dir) {
  const made = new Set();
  for (let at = 0; at + 512 <= tar.length;) {
    const name = text(tar, at, 100);
    if (!name) break;  // (the two zero blocks that end the archive)
    const size = parseInt(text(tar, at + 124, 12).trim() || '0', 8);
    const type = String.fromCharCode(tar[at + 156] || 48);
    const prefix = text(tar, at + 345, 155);
    const path = `${dir}/${prefix ? `${prefix}/` : ''}${name}`;
    if (type === '0') {
      const folder = path.slice(0, path.lastIndexOf('/'));
      if (!made.has(folder)) {
        FS.mkdirTree(folder);
        made.add(folder);
      }
      FS.writeFile(path, tar.subarray(at + 512, at + 512 + size));
    } else if (type !== '5') {
      throw new Error(`site-packages archive: entry ${path} of type '${type}' (only files and folders expected)`);
    }
    at += 512 + Math.ceil(size / 512) * 512;
  }
}
