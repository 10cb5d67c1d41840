package badgerfmt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"testing"
)

// encodeTestEntry encodes a log entry as Badger does: meta, user meta,
// then key length, value length and expiry as uvarints, key, value, and a
// big-endian CRC-32C of all that.
func encodeTestEntry(key, value []byte) []byte {
	b := []byte{0, 0}
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = binary.AppendUvarint(b, uint64(len(value)))
	b = binary.AppendUvarint(b, 0)
	b = append(b, key...)
	b = append(b, value...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// TestWalkLogTellsTornFromDamaged builds a log of three entries in a
// zeroed file, as Badger writes one, and checks every way a kill can tear
// the last write (a prefix of it written, zeros after) passes, while
// damage does not: a byte changed in an entry, or the file cut inside one.
func TestWalkLogTellsTornFromDamaged(t *testing.T) {
	var entries [][]byte
	for i := range 3 {
		key := append([]byte(fmt.Sprintf("records/v1/k\x00%016d", i)), 0, 0, 0, 0, 0, 0, 0, byte(i+1))
		entries = append(entries, encodeTestEntry(key, bytes.Repeat([]byte{byte('a' + i)}, 300)))
	}
	log := make([]byte, logHeaderSize)
	for _, e := range entries {
		log = append(log, e...)
	}
	const size = 8 << 10
	whole := func(b []byte) []byte { return append(bytes.Clone(b), make([]byte, size-len(b))...) }

	if err := walkLog(whole(log), size, nil); err != nil {
		t.Fatalf("an intact log: %v", err)
	}
	lastStart := len(log) - len(entries[2])
	for tear := lastStart; tear < len(log); tear++ {
		if err := walkLog(whole(log[:tear]), size, nil); err != nil {
			t.Fatalf("a write torn at byte %d: %v", tear, err)
		}
	}
	for off := logHeaderSize; off < lastStart; off += 7 {
		b := whole(log)
		b[off] ^= 0x5a
		if err := walkLog(b, size, nil); err == nil {
			t.Errorf("byte %d changed: no damage found", off)
		}
	}
	for cut := logHeaderSize + 1; cut < len(log); cut += 13 {
		if err := walkLog(log[:cut], cut, nil); err == nil && !slices.Contains(entryEnds(entries), cut) {
			t.Errorf("file cut at byte %d inside an entry: no damage found", cut)
		}
	}
}

func entryEnds(entries [][]byte) []int {
	ends, off := []int{}, logHeaderSize
	for _, e := range entries {
		off += len(e)
		ends = append(ends, off)
	}
	return ends
}
