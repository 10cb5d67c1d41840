package badgerfmt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
)

// Badger's logs — the write-ahead log of each memtable (.mem) and the
// value log (.vlog) — share one format: a header, then entries one after
// another, up to zeros (Badger sizes a log, with zeros, before it writes
// to it). Badger's Open reads every entry of the .mem logs, and the value
// log from the last point it recorded, and stops at the first entry that
// does not decode. Badger's own log reader is not exported, so the format
// is read here, as written by Badger v4 (see BadgerVersion).

// Facts of the log format the readers depend on.
const (
	// logHeaderSize is the header of a .mem or .vlog file: the id of the
	// encryption key (8 bytes, 0 when unencrypted) and a base IV (12).
	logHeaderSize = 20
	// maxKeyLen is the longest key (with its 8-byte version) Badger's log
	// reader accepts.
	maxKeyLen = 1 << 16
)

// Bits of an entry's meta byte (Badger's structs.go and value.go).
const (
	bitDelete         = 1 << 0
	bitValuePointer   = 1 << 1
	bitDiscardEarlier = 1 << 2
	bitMergeEntry     = 1 << 3
	bitTxn            = 1 << 6
	bitFinTxn         = 1 << 7
	// knownMetaBits are all of them: an entry found while looking past
	// damage with other bits set is not one Badger wrote.
	knownMetaBits = bitDelete | bitValuePointer | bitDiscardEarlier | bitMergeEntry | bitTxn | bitFinTxn
)

// badgerKeyPrefix begins the keys of Badger's own bookkeeping (the ends of
// transactions, the head of the value log), which are not a store's data.
const badgerKeyPrefix = "!badger!"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// A logEntry is one entry of a Badger log (.mem or .vlog file): a header
// (meta and user-meta bytes, then key length, value length and expiry as
// uvarints), the key (with its 8-byte version), the value, and a CRC-32C
// (Castagnoli) of all that, big-endian.
type logEntry struct {
	meta    byte
	key     []byte
	value   []byte
	expires uint64 // Unix seconds; 0 for never
	size    int    // bytes the entry takes in the log
}

var (
	errLogEnd   = errors.New("end of log")
	errLogShort = errors.New("entry runs past the end of the file")
	errLogBad   = errors.New("entry does not decode")
)

// decodeLogEntry decodes the entry at the start of b, as Badger's log
// reader does. It returns errLogEnd where Badger sees the end of the log (a
// zero key length: Badger zeroes the header after every write), errLogShort
// for an entry that runs past the end of b, and errLogBad for one whose
// lengths are out of range or whose checksum does not match.
func decodeLogEntry(b []byte) (logEntry, error) {
	if len(b) < 2 {
		return logEntry{}, errLogShort
	}
	p := 2
	var lens [3]uint64 // key length, value length, expiry
	for i := range lens {
		v, n := binary.Uvarint(b[p:])
		switch {
		case n == 0:
			if i == 0 && allZero(b[p:]) {
				return logEntry{}, errLogEnd
			}
			return logEntry{}, errLogShort
		case n < 0:
			return logEntry{}, errLogBad
		}
		lens[i] = v
		p += n
		if i == 0 && v == 0 {
			return logEntry{}, errLogEnd
		}
	}
	klen, vlen := lens[0], lens[1]
	if klen > maxKeyLen || vlen > math.MaxUint32 {
		return logEntry{}, errLogBad
	}
	body := uint64(p) + klen + vlen
	if body+crc32.Size > uint64(len(b)) {
		return logEntry{}, errLogShort
	}
	e := logEntry{
		meta:    b[0],
		key:     b[p : uint64(p)+klen],
		value:   b[uint64(p)+klen : body],
		expires: lens[2],
		size:    int(body) + crc32.Size,
	}
	if crc32.Checksum(b[:body], castagnoli) != binary.BigEndian.Uint32(b[body:]) {
		return e, errLogBad
	}
	return e, nil
}

// walkLog calls fn (when not nil) with every entry of a log, in order.
//
// Badger reads a log up to the first entry that does not decode, and
// drops the rest. That is right after a crash: the log ends at zeros, or
// at the one entry the process was killed while writing, a prefix of it
// written and the rest still zeros (Badger sizes a log, with zeros,
// before it writes to it). It is data loss when the entry was damaged
// after it was written. So walkLog calls the log damaged where what it
// finds is not what a crash leaves: an entry that runs past the end of the
// file (a file cut short); an entry whose lengths are out of range, or
// which fails its checksum though its last byte was written; or any
// intact entry after the one that does not decode.
//
// end is where the file's data ends (see dataEnd): past it are only zeros.
func walkLog(data []byte, end int, fn func(off int, e logEntry)) error {
	off := logHeaderSize
	for off < len(data) {
		e, err := decodeLogEntry(data[off:])
		switch {
		case err == nil:
			if fn != nil {
				fn(off, e)
			}
			off += e.size
			continue
		case errors.Is(err, errLogShort):
			return fmt.Errorf("the entry at byte %d runs past the end of the file (%d bytes): it was cut short", off, len(data))
		case errors.Is(err, errLogBad) && (e.size == 0 || data[off+e.size-1] != 0):
			// A torn write never reaches its last byte (the checksum's):
			// zeros follow the point where it stopped.
			return fmt.Errorf("the entry at byte %d does not decode: it was overwritten", off)
		}
		if next := resync(data[:end], off+1); next >= 0 {
			return fmt.Errorf("bytes from %d do not decode, yet intact entries follow from byte %d: Badger would drop them", off, next)
		}
		return nil
	}
	return nil
}

// resync returns the offset of the first intact entry at or after from,
// or -1 if there is none. It looks at every offset up to the last non-zero
// byte of data, so it costs in proportion to what follows the damage; it
// only runs where a log stops decoding. An entry may end with zeros
// beyond data's end (its checksum's last bytes, say), so entries are
// decoded from the whole of what data was cut from.
func resync(data []byte, from int) int {
	last := lastNonZero(data)
	whole := data[:cap(data)]
	for p := from; p <= last; p++ {
		if data[p]&^knownMetaBits != 0 {
			continue
		}
		e, err := decodeLogEntry(whole[p:])
		// A key holds at least one byte and Badger's 8-byte version.
		if err == nil && len(e.key) > 8 {
			return p
		}
	}
	return -1
}

// lastNonZero returns the index of the last non-zero byte of b, or -1.
func lastNonZero(b []byte) int {
	i := len(b)
	for i >= 8 && binary.NativeEndian.Uint64(b[i-8:i]) == 0 {
		i -= 8
	}
	for i > 0 && b[i-1] == 0 {
		i--
	}
	return i - 1
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// checkLog walks every entry of a .mem or .vlog file. When ident is not
// nil, it is set to the identity of the file as it was opened, before it
// was read: a change made since then changes it.
func checkLog(path string, ident *fileIdent) *Damage {
	var problem error
	err := withMapped(path, func(f *os.File, data []byte) error {
		if ident != nil {
			if fi, err := f.Stat(); err == nil {
				*ident = identOf(fi)
			}
		}
		switch {
		case len(data) == 0:
			return nil // created and not yet sized when a kill came: it holds nothing, and badgerstore removes it before Badger opens the store (which cannot open over it)
		case len(data) < logHeaderSize:
			problem = fmt.Errorf("%d bytes long, shorter than its %d-byte header", len(data), logHeaderSize)
		case binary.BigEndian.Uint64(data) != 0:
			problem = errors.New("its header names an encryption key, and otelrecords never encrypts")
		default:
			end := int(dataEnd(f, int64(len(data))))
			problem = guard(func() error { return walkLog(data, end, nil) })
		}
		return nil
	})
	switch {
	case err != nil:
		return damaged(path, "cannot be read", err)
	case problem != nil:
		return damaged(path, problem.Error(), nil)
	}
	return nil
}

// salvageLog hands every intact entry of a .mem log to add, stepping over
// damaged stretches to the next intact entry, and notes in s the bytes it
// stepped over.
func salvageLog(path string, add func([]byte, keyVersion), s *Salvaged) {
	name := filepath.Base(path)
	err := withMapped(path, func(f *os.File, data []byte) error {
		if len(data) < logHeaderSize || binary.BigEndian.Uint64(data) != 0 {
			return errors.New("its header does not read")
		}
		end := int(dataEnd(f, int64(len(data))))
		return guard(func() error {
			off := logHeaderSize
			for off < len(data) {
				e, err := decodeLogEntry(data[off:])
				if err == nil {
					if !bytes.HasPrefix(e.key, []byte(badgerKeyPrefix)) {
						add(e.key, keyVersion{meta: e.meta &^ (bitTxn | bitFinTxn), value: e.value, expires: e.expires})
					}
					off += e.size
					continue
				}
				next := resync(data[:end], off+1)
				if next < 0 {
					if errors.Is(err, errLogShort) || (errors.Is(err, errLogBad) && (e.size == 0 || data[off+e.size-1] != 0)) {
						s.Lost = append(s.Lost, fmt.Sprintf("bytes %d to %d of %s (cut short or overwritten)", off, min(end, len(data)), name))
					}
					return nil
				}
				s.Lost = append(s.Lost, fmt.Sprintf("bytes %d to %d of %s (overwritten)", off, next, name))
				off = next
			}
			return nil
		})
	})
	if err != nil {
		s.Lost = append(s.Lost, fmt.Sprintf("all of %s (%v)", name, err))
	}
}
