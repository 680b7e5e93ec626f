// The torn write the coordinator contract's `corruptTail` injects, shared by the specs.

import { open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { crc32 } from 'node:zlib'

/**
 * Tears sessdb's log as a crash in the middle of an append does: after the last record of the
 * newest segment, the start of a frame whose header is whole (its length checks) but whose
 * payload was never all written. sessdb's next open cuts it (a torn tail beyond every durable
 * mark); DSH's coordinator then closes the interrupted turn through `commitRepair`.
 * Layout: docs/FORMAT.md §2 (a 40-byte segment header) and §3 (a 16-byte frame header:
 * length, CRC-32 of the length, kind, flags, reserved, CRC-32 of header and payload).
 */
export async function tearLog(store: string): Promise<void> {
  const segments = (await readdir(join(store, 'segments'))).filter(n => n.endsWith('.seg')).sort()
  const file = await open(join(store, 'segments', segments.at(-1)!), 'r+')
  try {
    const bytes = (await file.readFile())
    let pos = 40
    // Records end where the preallocated zeros (or the file) begin: no record has a zero header.
    while (pos + 16 <= bytes.length && bytes.subarray(pos, pos + 16).some(b => b !== 0)) {
      pos += 16 + bytes.readUInt32LE(pos)
    }
    const payload = 300
    const header = Buffer.alloc(16)
    header.writeUInt32LE(payload, 0)
    const len = Buffer.alloc(4)
    len.writeUInt32LE(payload)
    header.writeUInt32LE(crc32(len), 4)
    header.writeUInt8(2, 8) // an append record
    header.writeUInt32LE(0xdeadbeef, 12) // a checksum the payload will never match
    // The header and the first 40 bytes of its payload reached the disk; nothing after.
    await file.write(Buffer.concat([header, Buffer.alloc(40, 0x61)]), 0, 56, pos)
  } finally {
    await file.close()
  }
}

