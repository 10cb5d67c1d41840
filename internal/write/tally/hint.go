package tally

import (
	"encoding/binary"
	"time"

	cw "github.com/otelrecords/otelrecords/internal/ground/cborwire"
)

// Hint says where, in a record's value, the fields a tally reads start
// (offsets from the value's start), as the encoder that wrote the value
// noted them: a Counter reads them in place instead of walking the
// value up to them. A warm session lets a record go for every one it
// holds, and the walk was half of what counting one cost. The zero Hint
// says nothing, and the value is walked.
type Hint struct {
	Name  uint32 // the name's text head; 0: no hint
	Attrs uint32 // the attributes map's head; 0: the record has none
	Wall  uint32 // wall_ns's value head
}

// HintSize is the size of a Hint as AppendHint appends it: three
// 16-bit offsets, which is all a record's holder has room for (the
// Recorder's held records, package hold's bound).
const HintSize = 6

// AppendHint appends h to dst in HintSize bytes, for a holder of the
// value to give back with ReadHint. A hint with an offset past 16 bits (a
// record of many long attributes) is appended as the zero Hint.
func AppendHint(dst []byte, h Hint) []byte {
	if h.Name > 0xffff || h.Attrs > 0xffff || h.Wall > 0xffff {
		h = Hint{}
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Name))
	dst = binary.BigEndian.AppendUint16(dst, uint16(h.Attrs))
	return binary.BigEndian.AppendUint16(dst, uint16(h.Wall))
}

// ReadHint reads a Hint AppendHint appended at the start of b.
func ReadHint(b []byte) Hint {
	_ = b[HintSize-1]
	return Hint{uint32(binary.BigEndian.Uint16(b)), uint32(binary.BigEndian.Uint16(b[2:])), uint32(binary.BigEndian.Uint16(b[4:]))}
}

// hinted reads what read reads at the places h says, and reports whether
// each was what it should be there.
// Each place must follow its key (name, attrs, wall_ns): a hint paired
// with a value it was not made for is not trusted by chance.
func (rec *record) hinted(b []byte, h Hint) bool {
	var i int
	if !after(b, int(h.Name), cw.KeyName) {
		return false
	}
	if rec.name, i = textAt(b, int(h.Name)); i < 0 {
		return false
	}
	if h.Attrs != 0 && (!after(b, int(h.Attrs), cw.KeyAttrs) || rec.attrs(b, int(h.Attrs)) < 0) {
		return false
	}
	j := int(h.Wall)
	if !after(b, j, cw.KeyWall) || j >= len(b) || b[j]>>5 != byte(cw.MajorUint) {
		return false
	}
	if d, _, ok := arg(b, j); ok && d <= 1<<62 {
		rec.wall = time.Duration(d)
	}
	return true
}

// after reports whether the text key, shorter than 24 bytes, ends at b[i]
// (encoded as a key of the record's map is).
func after(b []byte, i int, key string) bool {
	at := i - len(key) - 1
	return at >= 0 && i <= len(b) && b[at] == byte(cw.MajorText)<<5|byte(len(key)) && string(b[at+1:i]) == key
}
