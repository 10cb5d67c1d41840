package sessions

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

// SessionsNamespace is the namespace session rows are written to. Its last
// element, "sessions", is therefore not a record kind.
const SessionsNamespace = Root + "/sessions"

// MaxKindLen is the longest kind name, in bytes.
const MaxKindLen = 128

// keySuffixLen is the fixed width after a namespace: 0x00, then the session
// and seq as big-endian u64s. Fixed width makes Badger's byte order stamp
// order, so reads need no sort and a prune is one range per namespace.
const keySuffixLen = 1 + 8 + 8

// ErrInvalidKind is returned (wrapped) for a kind name the store cannot hold.
var ErrInvalidKind = errors.New("otelrecords: invalid record kind")

// CheckKind returns the kind in canonical form (without leading and trailing
// '/'), or an error wrapping ErrInvalidKind if it is empty after trimming,
// holds 0x00, is longer than MaxKindLen bytes, or is the reserved
// "sessions".
func CheckKind(kind string) (string, error) {
	k := strings.Trim(kind, "/")
	switch {
	case k == "":
		return "", fmt.Errorf("%w: empty", ErrInvalidKind)
	case len(k) > MaxKindLen:
		return "", fmt.Errorf("%w: %d bytes long (at most %d)", ErrInvalidKind, len(k), MaxKindLen)
	case strings.IndexByte(k, 0) >= 0:
		return "", fmt.Errorf("%w: contains 0x00", ErrInvalidKind)
	case k == "sessions":
		return "", fmt.Errorf("%w: %q is reserved for session rows", ErrInvalidKind, k)
	}
	return k, nil
}

// Namespace returns the namespace a kind's records are written to:
// "records/v1/<kind>". The kind must have passed CheckKind.
func Namespace(kind string) string { return Root + "/" + kind }

// RecordKey returns the key of a record: the namespace, 0x00, then the
// stamp's session and seq, big-endian.
func RecordKey(kind string, st Stamp) []byte {
	return appendKey(make([]byte, 0, len(Root)+1+len(kind)+keySuffixLen), Namespace(kind), uint64(st.Session), st.Seq)
}

// SessionKey returns the key of a session row: the sessions namespace,
// 0x00, then the id, big-endian.
func SessionKey(id SessionID) []byte {
	k := make([]byte, 0, len(SessionsNamespace)+1+8)
	k = append(k, SessionsNamespace...)
	k = append(k, 0)
	return binary.BigEndian.AppendUint64(k, uint64(id))
}

func appendKey(dst []byte, namespace string, session, seq uint64) []byte {
	dst = append(dst, namespace...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, session)
	return binary.BigEndian.AppendUint64(dst, seq)
}

// KeySize is the size in bytes of a record's key in the given kind, the
// namespace included: what the pending budget counts besides the value.
func KeySize(kind string) int { return len(Root) + 1 + len(kind) + keySuffixLen }

// ParseKey splits a key under Root into its kind and stamp (without offset).
// A session row's key gives the kind "sessions" and a stamp whose Session is
// its id and Seq 0. Keys that do not parse give an error; readers and
// prunes leave such keys alone.
func ParseKey(key []byte) (kind string, st Stamp, err error) {
	prefix := Root + "/"
	if !bytes.HasPrefix(key, []byte(prefix)) {
		return "", Stamp{}, fmt.Errorf("key not under %s", Root)
	}
	rest := key[len(prefix):]
	i := bytes.IndexByte(rest, 0)
	if i < 0 {
		return "", Stamp{}, errors.New("key without 0x00 after its namespace")
	}
	kind, tail := string(rest[:i]), rest[i+1:]
	if kind == "sessions" {
		if len(tail) != 8 {
			return "", Stamp{}, fmt.Errorf("session key with %d bytes after its namespace, want 8", len(tail))
		}
		return kind, Stamp{Session: SessionID(binary.BigEndian.Uint64(tail))}, nil
	}
	if _, err := CheckKind(kind); err != nil || strings.Trim(kind, "/") != kind {
		return "", Stamp{}, fmt.Errorf("key with invalid kind %q", kind)
	}
	if len(tail) != 16 {
		return "", Stamp{}, fmt.Errorf("record key with %d bytes after its namespace, want 16", len(tail))
	}
	return kind, Stamp{
		Session: SessionID(binary.BigEndian.Uint64(tail[:8])),
		Seq:     binary.BigEndian.Uint64(tail[8:]),
	}, nil
}

// namespaceStart returns the first key of a namespace: "<ns>\x00".
func namespaceStart(namespace string) []byte { return append([]byte(namespace), 0) }

// namespaceEnd returns the key just past every key of a namespace: "<ns>\x01".
func namespaceEnd(namespace string) []byte { return append([]byte(namespace), 1) }

// sessionBound returns the first key of a namespace whose session is id:
// "<ns>\x00<id>".
func sessionBound(namespace string, id uint64) []byte {
	return binary.BigEndian.AppendUint64(namespaceStart(namespace), id)
}
