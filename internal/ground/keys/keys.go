// Package keys is the store's key layout and size limits: where every
// record and session row lives, and how large they may be. It is the one
// home of docs/FORMAT.md §2, shared by the writer (package
// internal/write/recorder), the reader (package sessions) and the store's
// forensics, so a change to the layout is made here alone.
//
// A record's key is its namespace, 0x00, then its session and seq as
// big-endian u64s: fixed width, so the store's byte order is stamp order,
// reads need no sort, and a prune is one range per namespace.
package keys

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Root is the namespace root of every record, versioned so a reader picks
// the layout it knows and an export can drop them all by one prefix.
const Root = "records/v1"

// Sessions is the namespace session rows are written to. Its last
// element, "sessions", is therefore not a record kind.
const Sessions = Root + "/sessions"

// SessionsKind is the last element of Sessions, reserved: no record kind.
const SessionsKind = "sessions"

// MaxKindLen is the longest kind name, in bytes.
const MaxKindLen = 128

// MaxRecordSize is the largest record a writer accepts: its key and its
// encoded value together, in bytes. Badger takes values of up to 16 MiB
// (the size of its value-log files); the margin is for the record's key
// and other stores' overheads.
const MaxRecordSize = 15 << 20

// MaxSessionValue is the longest label, resource attribute key or
// resource attribute value (a string's bytes, an array's elements) a
// writer puts in a session row, in bytes; longer ones are cut, and the
// row says so (docs/FORMAT.md §3.1). A session row must always be
// writable: without it no record of the session is.
const MaxSessionValue = 64 << 10

// MaxSessionRow is the largest session row a writer writes, encoded, in
// bytes: resource attributes past it are left out, and the row says so.
const MaxSessionRow = 1 << 20

// MaxValueSize is the largest value a reader decodes, in bytes; larger
// ones are counted as undecodable. It is the largest value Badger stores,
// above MaxRecordSize, which writers keep to.
const MaxValueSize = 16 << 20

// suffixLen is the fixed width after a record's namespace: 0x00, then the
// session and seq as big-endian u64s.
const suffixLen = 1 + 8 + 8

// ErrInvalidKind is returned (wrapped) for a kind name the store cannot
// hold.
var ErrInvalidKind = errors.New("otelrecords: invalid record kind")

// CheckKind returns the kind in canonical form (without leading and
// trailing '/'), or an error wrapping ErrInvalidKind if it is empty after
// trimming, holds 0x00, is longer than MaxKindLen bytes, or is the
// reserved "sessions".
func CheckKind(kind string) (string, error) {
	k := strings.Trim(kind, "/")
	switch {
	case k == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidKind)
	case len(k) > MaxKindLen:
		return "", fmt.Errorf("%w: %d bytes long (at most %d)", ErrInvalidKind, len(k), MaxKindLen)
	case strings.IndexByte(k, 0) >= 0:
		return "", fmt.Errorf("%w: contains 0x00", ErrInvalidKind)
	case k == SessionsKind:
		return "", fmt.Errorf("%w: %q is reserved for session rows", ErrInvalidKind, k)
	}
	return k, nil
}

// Namespace returns the namespace a kind's records are written to:
// "records/v1/<kind>". The kind must have passed CheckKind.
func Namespace(kind string) string { return Root + "/" + kind }

// Record returns the key of a record of kind in session at seq.
func Record(kind string, session, seq uint64) []byte {
	return AppendRecord(make([]byte, 0, Size(kind)), kind, session, seq)
}

// AppendRecord appends the key of a record of kind in session at seq to
// dst, so a writer can build keys without an allocation each.
func AppendRecord(dst []byte, kind string, session, seq uint64) []byte {
	dst = append(dst, Root...)
	dst = append(dst, '/')
	dst = append(dst, kind...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, session)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// Session returns the key of a session row: the sessions namespace, 0x00,
// then the id, big-endian.
func Session(id uint64) []byte {
	k := make([]byte, 0, len(Sessions)+1+8)
	k = append(k, Sessions...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, id)
}

// IsSession reports whether k is a session row's key.
func IsSession(k []byte) bool {
	return len(k) == len(Sessions)+9 && string(k[:len(Sessions)]) == Sessions && k[len(Sessions)] == 0
}

// IsRecord reports whether k is the key of a record: under Root, and not
// in the sessions namespace (a session row's, a tally's). It checks the
// prefix only, cheaply, for a writer counting what it wrote; a reader
// parses (Parse).
func IsRecord(k []byte) bool {
	return len(k) > len(Root)+1 && string(k[:len(Root)]) == Root && k[len(Root)] == '/' &&
		!(len(k) > len(Sessions) && string(k[:len(Sessions)]) == Sessions && k[len(Sessions)] == 0)
}

// Size is the size in bytes of a record's key in the given kind, the
// namespace included: what the pending budget counts besides the value.
func Size(kind string) int { return len(Root) + 1 + len(kind) + suffixLen }

// Parse splits a key under Root into its kind, session and seq. A session
// row's key gives the kind "sessions", its id as session and seq 0. Keys
// that do not parse give an error; readers and prunes leave such keys
// alone.
func Parse(key []byte) (kind string, session, seq uint64, err error) {
	k, tail, err := Split(key)
	if err != nil {
		return "", 0, 0, err
	}
	kind = string(k)
	if kind == SessionsKind {
		if len(tail) != 8 {
			return "", 0, 0, fmt.Errorf("session key with %d bytes after its namespace, want 8", len(tail))
		}
		return kind, binary.BigEndian.Uint64(tail), 0, nil
	}
	if !IsKind(kind) {
		return "", 0, 0, fmt.Errorf("key with invalid kind %q", kind)
	}
	session, seq, ok := RecordTail(tail)
	if !ok {
		return "", 0, 0, fmt.Errorf("record key with %d bytes after its namespace, want 16", len(tail))
	}
	return kind, session, seq, nil
}

// Split splits a key under Root at the 0x00 after its namespace: the kind
// (or "sessions"), unchecked, and what follows, both parts of key. It
// allocates nothing, for readers that walk many keys of one kind and check
// the kind once (IsKind) rather than at every key as Parse does.
func Split(key []byte) (kind, tail []byte, err error) {
	prefix := Root + "/"
	if !bytes.HasPrefix(key, []byte(prefix)) {
		return nil, nil, fmt.Errorf("key not under %s", Root)
	}
	rest := key[len(prefix):]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return nil, nil, errors.New("key without 0x00 after its namespace")
	}
	return rest[:i], rest[i+1:], nil
}

// IsKind reports whether kind names a kind of records as a key holds it:
// one CheckKind takes, in its canonical form, and not "sessions".
func IsKind(kind string) bool {
	k, err := CheckKind(kind)
	return err == nil && k == kind
}

// RecordTail reads the session and seq of a record key's tail (what Split
// gives after the namespace), and false when it is not 16 bytes long.
func RecordTail(tail []byte) (session, seq uint64, ok bool) {
	if len(tail) != suffixLen-1 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(tail[:8]), binary.BigEndian.Uint64(tail[8:]), true
}

// Parses reports whether a key is one of ours; prunes leave others alone.
func Parses(key []byte) bool {
	_, _, _, err := Parse(key)
	return err == nil
}

// NamespaceStart returns the first key of a namespace: "<ns>\x00".
func NamespaceStart(namespace string) []byte { return append([]byte(namespace), 0) }

// NamespaceEnd returns the key just past every key of a namespace:
// "<ns>\x01".
func NamespaceEnd(namespace string) []byte { return append([]byte(namespace), 1) }

// SessionBound returns the first key of a namespace whose session is id:
// "<ns>\x00<id>".
func SessionBound(namespace string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(NamespaceStart(namespace), id)
}

// tallyMark follows a session's id in the key of one part of its tally
// (docs/FORMAT.md §3.6): the key sorts right after the session's row.
const tallyMark = 0x02

// Tally returns the key of one part of session id's tally: the sessions
// namespace, 0x00, the id, 0x02, then the part, big-endian. Each writer
// of a session (a process, or an Importer again after a restart) writes
// its own part; a reader sums them. Parse does not take it (17 bytes
// follow the namespace), so readers that do not know tallies step over
// it.
func Tally(id, part uint64) []byte {
	k := make([]byte, 0, len(Sessions)+1+8+1+8)
	k = append(k, Sessions...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, id)
	k = append(k, tallyMark)
	return binary.BigEndian.AppendUint64(k, part)
}

// TallyPrefix returns the prefix every part of session id's tally starts
// with.
func TallyPrefix(id uint64) []byte {
	return append(Session(id), tallyMark)
}

// IsTally reports whether k is the key of a part of a session's tally:
// a range delete's match for a prune that takes a session's tally with
// it.
func IsTally(k []byte) bool {
	_, _, ok := ParseTally(k)
	return ok
}

// ParseTally returns the session and part of a tally key, and false for
// any other key.
func ParseTally(k []byte) (id, part uint64, ok bool) {
	n := len(Sessions)
	if len(k) != n+1+8+1+8 || string(k[:n]) != Sessions || k[n] != 0 || k[n+9] != tallyMark {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(k[n+1:]), binary.BigEndian.Uint64(k[n+10:]), true
}
