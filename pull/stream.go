package pull

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
)

// This file reads an api_v3 answer as a stream, a span at a time, so that
// what a pull holds does not follow what the backend sends: a value it
// has no use for (junk before "result", an unknown field) is skipped
// without being held, whatever its size; a span, a Resource or a scope is
// held only up to the value limit (Options.MaxSpanBytes), and a span past
// it is stepped over, read to its end but not held. encoding/json's
// Decoder cannot do either: it holds a whole value, or a whole string
// token, before it hands it on.

// maxKeyBytes bounds a key of an object of the answer: OTLP's are words.
const maxKeyBytes = 1 << 10

// errValueTooLarge is what capture returns for a value past its limit,
// which it has read to its end.
var errValueTooLarge = errors.New("a value past the limit")

// scanner reads JSON a token at a time from a buffered reader.
type scanner struct {
	r   *bufio.Reader
	buf []byte // the value being captured

	capturing bool // bytes read go to buf
	over      bool // the value being captured passed limit
	limit     int  // the length buf may reach
}

func newScanner(r io.Reader) *scanner { return &scanner{r: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next byte that is not white space, consumed.
func (s *scanner) next() (byte, error) {
	for {
		c, err := s.r.ReadByte()
		if err != nil {
			return 0, unexpected(err)
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c, nil
	}
}

// peek returns the next byte that is not white space, not consumed.
func (s *scanner) peek() (byte, error) {
	c, err := s.next()
	if err == nil {
		err = s.r.UnreadByte()
	}
	return c, err
}

// unexpected makes the end of an answer in the middle of a value an error
// of its own.
func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// expect reads the byte c, or fails saying what came instead.
func (s *scanner) expect(c byte, what string) error {
	got, err := s.next()
	if err != nil {
		return err
	}
	if got != c {
		return fmt.Errorf("OTLP JSON: want %s, found %q", what, got)
	}
	return nil
}

// object reads an object, calling fn with each key; fn reads the key's
// value (value, capture, or a reader of its own).
func (s *scanner) object(fn func(key string) error) error {
	if err := s.expect('{', "an object"); err != nil {
		return err
	}
	if c, err := s.peek(); err != nil {
		return err
	} else if c == '}' {
		s.r.ReadByte()
		return nil
	}
	for {
		if c, err := s.peek(); err != nil {
			return err
		} else if c != '"' {
			return fmt.Errorf("OTLP JSON: want a key, found %q", c)
		}
		s.buf = s.buf[:0]
		if err := s.value(maxKeyBytes); err != nil {
			if errors.Is(err, errValueTooLarge) {
				return fmt.Errorf("OTLP JSON: a key longer than %d bytes", maxKeyBytes)
			}
			return err
		}
		var key string
		if err := json.Unmarshal(s.buf, &key); err != nil {
			return fmt.Errorf("OTLP JSON: %w", err)
		}
		if err := s.expect(':', "a colon"); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		c, err := s.next()
		switch {
		case err != nil:
			return err
		case c == '}':
			return nil
		case c != ',':
			return fmt.Errorf("OTLP JSON: want a comma or the end of an object, found %q", c)
		}
	}
}

// array reads an array, calling fn at each element, which fn reads.
func (s *scanner) array(fn func() error) error {
	if err := s.expect('[', "a list"); err != nil {
		return err
	}
	if c, err := s.peek(); err != nil {
		return err
	} else if c == ']' {
		s.r.ReadByte()
		return nil
	}
	for {
		if err := fn(); err != nil {
			return err
		}
		c, err := s.next()
		switch {
		case err != nil:
			return err
		case c == ']':
			return nil
		case c != ',':
			return fmt.Errorf("OTLP JSON: want a comma or the end of a list, found %q", c)
		}
	}
}

// skip reads the next value, of any size, holding none of it.
func (s *scanner) skip() error {
	s.capturing = false
	return s.scan()
}

// value reads the next value into s.buf (appended: white space between
// tokens left out) when it has at most limit bytes; past it, it reads the
// value to its end, holding no more, and returns errValueTooLarge. It
// checks that brackets balance and strings end, not that the value is
// well formed: whoever reads s.buf does.
func (s *scanner) value(limit int) error {
	s.capturing, s.over, s.limit = true, false, len(s.buf)+limit
	err := s.scan()
	if err == nil && s.over {
		err = errValueTooLarge
	}
	return err
}

// emit appends b to the value being captured, if any, up to its limit.
func (s *scanner) emit(b []byte) {
	if !s.capturing {
		return
	}
	if len(s.buf)+len(b) > s.limit {
		s.capturing, s.over = false, true
		return
	}
	s.buf = append(s.buf, b...)
}

func (s *scanner) emitByte(c byte) {
	if !s.capturing {
		return
	}
	if len(s.buf) >= s.limit {
		s.capturing, s.over = false, true
		return
	}
	s.buf = append(s.buf, c)
}

// scan reads the next value, handing its bytes to emit.
func (s *scanner) scan() error {
	depth := 0
	for {
		c, err := s.next()
		if err != nil {
			return err
		}
		switch c {
		case '{', '[':
			depth++
			s.emitByte(c)
		case '}', ']':
			if depth--; depth < 0 {
				return fmt.Errorf("OTLP JSON: %q where a value belongs", c)
			}
			s.emitByte(c)
		case ',', ':':
			if depth == 0 {
				return fmt.Errorf("OTLP JSON: %q where a value belongs", c)
			}
			s.emitByte(c)
		case '"':
			s.emitByte(c)
			if err := s.str(); err != nil {
				return err
			}
		default:
			s.emitByte(c)
			if err := s.scalar(); err != nil {
				return err
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// str reads the rest of a string whose opening quote was read, the
// closing quote included.
func (s *scanner) str() error {
	backslashes := 0 // ending the bytes read so far
	for {
		chunk, err := s.r.ReadSlice('"')
		if err != nil && err != bufio.ErrBufferFull {
			return unexpected(err)
		}
		s.emit(chunk)
		text := chunk
		if err == nil {
			text = chunk[:len(chunk)-1]
		}
		if n := len(text) - len(bytes.TrimRight(text, `\`)); n == len(text) {
			backslashes += n
		} else {
			backslashes = n
		}
		if err == nil {
			if backslashes%2 == 0 {
				return nil
			}
			backslashes = 0 // an escaped quote
		}
	}
}

// scalar reads the rest of a number, true, false or null.
func (s *scanner) scalar() error {
	for {
		c, err := s.r.ReadByte()
		if err == io.EOF {
			return nil // an answer that is one number
		}
		if err != nil {
			return err
		}
		switch c {
		case ' ', '\t', '\n', '\r', ',', ':', ']', '}', '[', '{', '"':
			return s.r.UnreadByte()
		}
		s.emitByte(c)
	}
}

// traceSink takes what readTraces reads.
type traceSink struct {
	// resource is called with each ResourceSpans' Resource attributes
	// (nil when it has none), before its spans.
	resource func(attrs []keyValue) error
	// span is called with each span, its scope set.
	span func(s *span) error
	// stepped is called for each span past the value limit, with its
	// trace id when the part read names it.
	stepped func(trace [16]byte, known bool) error
}

// readTraces reads an api_v3 answer, {"result": {"resourceSpans": [...]}},
// a span at a time, holding at most limit bytes of a span, a Resource or a
// scope (and of spans that come before their Resource or scope, which wait
// for it). Other keys are skipped, whatever their size.
func readTraces(r io.Reader, limit int, sink traceSink) error {
	s := newScanner(r)
	errDone := errors.New("done")
	err := s.object(func(key string) error {
		if key != "result" {
			return s.skip()
		}
		return s.object(func(key string) error {
			if key != "resourceSpans" {
				return s.skip()
			}
			if c, err := s.peek(); err != nil {
				return err
			} else if c != '[' {
				return fmt.Errorf("OTLP JSON: resourceSpans is not a list (%q)", c)
			}
			if err := s.array(func() error { return readResourceSpans(s, limit, sink) }); err != nil {
				return err
			}
			return errDone // the rest of the answer holds no spans
		})
	})
	if errors.Is(err, errDone) {
		return nil
	}
	return err
}

// waiting is a span read before what it belongs to: its Resource, or its
// scope.
type waiting struct {
	s      *span
	scopes int  // its ScopeSpans, counted within the ResourceSpans
	scoped bool // its scope is set
}

// readResourceSpans reads one ResourceSpans, handing its Resource and
// then its spans to sink. Spans that come before their Resource or their
// scope (OTLP JSON writers put those first) wait, up to limit bytes. What
// it holds besides is a ScopeSpans' scope at a time.
func readResourceSpans(s *scanner, limit int, sink traceSink) error {
	var (
		resKnown  bool
		scopes    int // the ScopeSpans read so far
		held      []waiting
		heldBytes int
	)
	release := func() error {
		if !resKnown {
			return nil
		}
		keep := held[:0]
		for _, w := range held {
			if !w.scoped {
				keep = append(keep, w)
				continue
			}
			if err := sink.span(w.s); err != nil {
				return err
			}
		}
		clear(held[len(keep):])
		held = keep
		if len(held) == 0 {
			heldBytes = 0
		}
		return nil
	}
	// setScope gives the spans of the ScopeSpans being read their scope.
	setScope := func(name, version string) error {
		for i := range held {
			if w := &held[i]; w.scopes == scopes && !w.scoped {
				w.s.scope.Name, w.s.scope.Version, w.scoped = name, version, true
			}
		}
		return release()
	}
	err := s.object(func(key string) error {
		switch key {
		case "resource":
			var res struct {
				Attributes []keyValue `json:"attributes"`
			}
			if err := s.decode(limit, "a Resource", &res); err != nil {
				return err
			}
			if resKnown {
				return errors.New("OTLP JSON: a ResourceSpans with two resources")
			}
			resKnown = true
			if err := sink.resource(res.Attributes); err != nil {
				return err
			}
			return release()
		case "scopeSpans":
			return s.array(func() error {
				scopes++
				var scope *struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				}
				err := s.object(func(key string) error {
					switch key {
					case "scope":
						if scope != nil {
							return errors.New("OTLP JSON: a ScopeSpans with two scopes")
						}
						if err := s.decode(limit, "a scope", &scope); err != nil {
							return err
						}
						if scope == nil { // null
							scope = &struct {
								Name    string `json:"name"`
								Version string `json:"version"`
							}{}
						}
						return setScope(scope.Name, scope.Version)
					case "spans":
						return s.array(func() error {
							sp, size, err := s.span(limit, sink)
							if err != nil || sp == nil {
								return err
							}
							w := waiting{s: sp, scopes: scopes, scoped: scope != nil}
							if w.scoped {
								sp.scope.Name, sp.scope.Version = scope.Name, scope.Version
							}
							held = append(held, w)
							if resKnown && w.scoped {
								return release()
							}
							if heldBytes += size; heldBytes > limit {
								return fmt.Errorf("OTLP JSON: spans before their Resource or scope past %d bytes (the span limit)", limit)
							}
							return nil
						})
					}
					return s.skip()
				})
				if err != nil || scope != nil {
					return err
				}
				return setScope("", "") // a ScopeSpans without a scope has the empty one
			})
		}
		return s.skip()
	})
	if err != nil {
		return err
	}
	if !resKnown {
		resKnown = true
		if err := sink.resource(nil); err != nil {
			return err
		}
		return release()
	}
	return nil
}

// decode reads the next value, of at most limit bytes, into v.
func (s *scanner) decode(limit int, what string, v any) error {
	s.buf = s.buf[:0]
	if err := s.value(limit); err != nil {
		if errors.Is(err, errValueTooLarge) {
			return fmt.Errorf("%w: %s of more than %d bytes (the span limit)", ErrAnswerTooLarge, what, limit)
		}
		return err
	}
	if err := json.Unmarshal(s.buf, v); err != nil {
		return fmt.Errorf("OTLP JSON: %w", err)
	}
	return nil
}

// traceIDPattern finds a span's trace id in the part read of a span past
// the limit (OTLP JSON writers put it first).
var traceIDPattern = regexp.MustCompile(`"traceId"\s*:\s*"([0-9a-fA-F]{32})"`)

// span reads the next span and its size; nil, having told sink, when it
// is past limit.
func (s *scanner) span(limit int, sink traceSink) (*span, int, error) {
	s.buf = s.buf[:0]
	err := s.value(limit)
	if errors.Is(err, errValueTooLarge) {
		var id [16]byte
		m := traceIDPattern.FindSubmatch(s.buf)
		if m != nil {
			hex.Decode(id[:], m[1])
		}
		return nil, 0, sink.stepped(id, m != nil)
	}
	if err != nil {
		return nil, 0, err
	}
	sp := new(span)
	if err := json.Unmarshal(s.buf, sp); err != nil {
		return nil, 0, fmt.Errorf("OTLP JSON: %w", err)
	}
	return sp, len(s.buf), nil
}
