package cborwire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Decode limits: a store is untrusted input (it travels between machines),
// so no value may make a reader allocate without bound or recurse deeply.
// Readers refuse values beyond them; writers refuse to write such records,
// which would be unreadable once written.
const (
	// MaxNestedLevels is the deepest nesting of CBOR arrays and maps.
	MaxNestedLevels = 16
	// MaxArrayElements is the longest array: events, or an array attribute.
	MaxArrayElements = 1 << 20
	// MaxMapPairs is the most pairs in one map: attributes of a record,
	// an event or a session's resource.
	MaxMapPairs = 1 << 17
)

// The decoding budget. The decode limits bound each container, not what
// a value of many small ones makes a reader allocate: every item a value holds becomes Go values, and an item of one byte can
// become many (an empty map inside an attribute is 64 bytes of map and
// interface; a map of one pair, 300). So before a value is decoded, a walk
// over its bytes, which allocates nothing, charges every item what
// decoding it may allocate, and a value whose charge passes its budget is
// refused as one that does not decode. The charges are set at or above
// what the decoder allocates for the item in the costliest place it may
// sit (an attribute's value, decoded into an interface), so what decoding
// an accepted value allocates stays within its budget; package sessions'
// test measures it, over every shape docs/FORMAT.md §5 lists. The Decoder
// charges as the walk does.
const (
	// decodeAmplification is how many bytes decoding may allocate per byte
	// of the value, and decodeSlack how many besides, for the fixed cost
	// of a small value.
	decodeAmplification = 56
	decodeSlack         = 64 << 10

	costArrayItem = 32  // a slot in []any (16), and in the typed slice made of it (up to 16)
	costMapItem   = 64  // half a pair: map slots (a table is a power of two, at most 7/8 full: up to 75 a pair) and an attribute (32 a pair)
	costGroup     = 264 // the first group of slots a map with any pair allocates (8 slots)
	costArray     = 48  // a slice header, boxed, twice: in []any, and as a Value
	costMap       = 48  // a map header
	costTag       = 48  // a tag's number and content, boxed (cbor.Tag, time.Time, big.Int)
	costString    = 24  // a string header, boxed, and its bytes' rounding (its bytes are charged one for one)
	costNumber    = 8   // a number, boxed
)

// budgetFree is the largest value that cannot pass its budget, however it
// is made: a byte begins at most one item, charged at most a slot, a
// map's first group and its own header (a string's bytes are charged one
// for one). Smaller values, most records, are not walked.
const budgetFree = decodeSlack / (costMapItem + costGroup + costMap - decodeAmplification)

// Budget returns what decoding a value of n bytes may allocate.
func Budget(n int) int64 { return decodeAmplification*int64(n) + decodeSlack }

// ErrOverBudget is matched by the error of a value whose decoding may
// allocate more than its budget.
var ErrOverBudget = errors.New("value would allocate more than its decoding budget")

// CheckBudget walks the CBOR item in b, charging every item it holds, and
// returns an error when the charges pass budget(len(b)), or when b is not
// a well-formed item (the decoder says why in more words; this only stops
// early). It allocates nothing, and costs one pass over b.
func CheckBudget(b []byte) error {
	if len(b) <= budgetFree {
		return nil
	}
	return WalkBudget(b)
}

// WalkBudget is CheckBudget's walk, whatever the value's size.
func WalkBudget(b []byte) error {
	type frame struct {
		left  int64 // items to come; -1 for an indefinite length
		items int64 // items seen
		isMap bool
		isTag bool
	}
	var (
		stack [MaxNestedLevels + 1]frame
		depth int
		off   int
		cost  int64
	)
	limit := Budget(len(b))
	for {
		if off >= len(b) {
			return errTruncated
		}
		ib := b[off]
		off++
		complete := true // the item ends here (not a container with items to come)
		if ib == 0xff {
			// A break ends the innermost container of indefinite length.
			if depth == 0 || stack[depth-1].left != -1 {
				return errMalformed
			}
			depth--
		} else {
			if depth > 0 {
				switch f := &stack[depth-1]; {
				case f.isTag:
				case f.isMap:
					if f.items == 0 {
						cost += costGroup
					}
					f.items++
					cost += costMapItem
				default:
					f.items++
					cost += costArrayItem
				}
			}
			major, ai := ib>>5, ib&0x1f
			arg, n, err := argument(b[off:], ai)
			if err != nil {
				return err
			}
			off += n
			indefinite := ai == 31
			if indefinite && (major < 2 || major == 6) {
				return errMalformed
			}
			switch major {
			case 0, 1:
				cost += costNumber
			case 2, 3:
				if indefinite {
					// Chunks of the same major type, up to a break.
					for {
						if off >= len(b) {
							return errTruncated
						}
						if b[off] == 0xff {
							off++
							break
						}
						cb := b[off]
						if cb>>5 != major || cb&0x1f == 31 {
							return errMalformed
						}
						clen, cn, err := argument(b[off+1:], cb&0x1f)
						if err != nil {
							return err
						}
						off += 1 + cn
						if clen > uint64(len(b)-off) {
							return errTruncated
						}
						off += int(clen)
						cost += int64(clen)
					}
					cost += costString
				} else {
					if arg > uint64(len(b)-off) {
						return errTruncated
					}
					off += int(arg)
					if arg > 0 || major == 2 {
						cost += costString + int64(arg)
					}
				}
			case 4, 5:
				if indefinite || arg > 0 {
					if depth == len(stack) {
						return errTooDeep
					}
					left := int64(-1)
					if !indefinite {
						// Every item takes a byte at least: a header
						// claiming more than the value holds is refused
						// here, before it is multiplied.
						if arg > uint64(len(b)-off) {
							return errTruncated
						}
						left = int64(arg)
						if major == 5 {
							left *= 2
						}
					}
					stack[depth] = frame{left: left, isMap: major == 5}
					depth++
					complete = false
				}
				if major == 4 {
					cost += costArray
				} else {
					cost += costMap
				}
			case 6:
				if depth == len(stack) {
					return errTooDeep
				}
				stack[depth] = frame{left: 1, isTag: true}
				depth++
				complete = false
				cost += costTag
			case 7:
				if ai >= 25 {
					cost += costNumber
				}
			}
		}
		if cost > limit {
			return fmt.Errorf("%w (%d bytes for %d, at most %d)", ErrOverBudget, cost, len(b), limit)
		}
		if !complete {
			continue
		}
		// The item is done: so may be the containers it ends.
		for depth > 0 {
			f := &stack[depth-1]
			if f.left == -1 {
				break
			}
			if f.left--; f.left > 0 {
				break
			}
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

var (
	errTruncated = errors.New("CBOR item cut short")
	errMalformed = errors.New("malformed CBOR item")
	errTooDeep   = fmt.Errorf("CBOR nested deeper than %d", MaxNestedLevels)
)

// argument reads the argument of a CBOR head whose additional information
// is ai from b (the bytes after the head's first), and how many bytes it
// took. An indefinite length (31) reads as 0.
func argument(b []byte, ai byte) (uint64, int, error) {
	switch {
	case ai < 24:
		return uint64(ai), 0, nil
	case ai == 31:
		return 0, 0, nil
	case ai > 27:
		return 0, 0, errMalformed
	}
	n := 1 << (ai - 24)
	if len(b) < n {
		return 0, 0, errTruncated
	}
	switch n {
	case 1:
		return uint64(b[0]), 1, nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), 2, nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), 4, nil
	}
	return binary.BigEndian.Uint64(b), 8, nil
}
