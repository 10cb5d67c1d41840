package recorder

import (
	"fmt"

	"github.com/otelrecords/otelrecords/internal/ground/keys"
	"github.com/otelrecords/otelrecords/sessions"
)

// checkLeastSize returns an error wrapping ErrTooLarge when a record of
// kind k is beyond what a store holds by the bytes of its strings alone,
// which every encoding of it contains: a span carrying a 100 MB attribute
// is refused without being encoded, so that refusing it costs no copy of
// the value (issue 22: 200 such spans took a writer to 1.87 GB).
func checkLeastSize(k string, body *sessions.Record) error {
	if n := keys.Size(k) + leastSize(body); n > keys.MaxRecordSize {
		return fmt.Errorf("%w: at least %d bytes encoded, at most %d", ErrTooLarge, n, keys.MaxRecordSize)
	}
	return nil
}

// leastSize is a lower bound of the encoded size of body: the bytes of its
// strings and a byte for every other attribute value and element. It
// stops counting once past MaxRecordSize, whose excess is all it is
// asked about.
func leastSize(body *sessions.Record) int {
	n := len(body.Name) + len(body.Status.Description) + len(body.TraceState) +
		len(body.Scope.Name) + len(body.Scope.Version) + len(body.SpanKind)
	n += leastAttrs(body.Attributes)
	for i := range body.Events {
		if n > keys.MaxRecordSize {
			return n
		}
		n += len(body.Events[i].Name) + leastAttrs(body.Events[i].Attributes)
	}
	for i := range body.Links {
		if n > keys.MaxRecordSize {
			return n
		}
		n += len(body.Links[i].TraceState) + leastAttrs(body.Links[i].Attributes)
	}
	for _, in := range body.Inputs {
		n += len(in)
	}
	return n
}

// leastAttrs is leastSize's count for attributes.
func leastAttrs(a sessions.Attrs) int {
	n := 0
	for _, kv := range a {
		if n > keys.MaxRecordSize {
			return n
		}
		n += len(kv.Key)
		switch x := kv.Value.Any().(type) {
		case string:
			n += len(x)
		case []string:
			for _, s := range x {
				n += len(s)
			}
		default:
			n += max(arrayLen(kv.Value), 1)
		}
	}
	return n
}
