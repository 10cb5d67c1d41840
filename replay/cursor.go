package replay

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/sessions"
)

// CursorHeader opens a cursor file (docs/FORMAT.md §10): then a line
// "upto ID" when an older cursor's session is carried over, and one line
// per session, its id and the seqs of its records sent, as ranges
// ("1735787045006000000 0-149,152").
const CursorHeader = "# records replay cursor v2: session id, then the seqs of its records the backend accepted"

// A Cursor says which records of a store were sent, so that a replay run
// after each build, or from cron, sends each record once (Resume): by
// session, the seqs of its records the backend accepted. A session's
// records are stamped in order, so what was sent of it is a range or a
// few, and the file stays the size of the store's list of sessions.
//
// A session is named once every record of it sent was accepted, and not
// before: a record written later under a seq below others sent (a span
// open since its session began, ending now) is still to send.
type Cursor struct {
	// upTo is what a cursor of an older records, which named the newest
	// session it sent, meant: every record of the sessions at or below it
	// was sent.
	upTo sessions.SessionID
	sent map[sessions.SessionID]seqSet
}

// Sent reports whether the cursor names the record stamped st as sent.
func (c *Cursor) Sent(st sessions.Stamp) bool {
	return st.Session <= c.upTo || c.sent[st.Session].has(st.Seq)
}

// add names seqs of the session as sent.
func (c *Cursor) add(id sessions.SessionID, seqs seqSet) {
	c.sent[id] = c.sent[id].union(seqs)
}

// ReadCursor reads the cursor file at path. A file that does not exist
// names nothing sent; one written by an older records (a session id
// alone) names every record of that session and the older ones.
func ReadCursor(path string) (*Cursor, error) {
	c := &Cursor{sent: map[sessions.SessionID]seqSet{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the cursor: %w", err)
	}
	bad := func(why string) error {
		return fmt.Errorf("the cursor %s does not name what was sent (%s; it holds %q)", path, why, shorten(string(b), 40))
	}
	text := strings.TrimSpace(string(b))
	if !strings.HasPrefix(text, "#") {
		// An older records wrote the id of the newest session it sent.
		id, err := strconv.ParseUint(text, 10, 64)
		if err != nil {
			return nil, bad("neither a cursor nor one session id, as records sessions prints it")
		}
		c.upTo = sessions.SessionID(id)
		return c, nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(nil, len(b)+1)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 2 && f[0] == "upto" {
			id, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return nil, bad(fmt.Sprintf("line %d", n))
			}
			c.upTo = sessions.SessionID(id)
			continue
		}
		id, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || len(f) != 2 {
			return nil, bad(fmt.Sprintf("line %d", n))
		}
		set, ok := parseSeqSet(f[1])
		if !ok {
			return nil, bad(fmt.Sprintf("line %d", n))
		}
		c.add(sessions.SessionID(id), set)
	}
	return c, nil
}

// shorten returns s cut to at most n characters, with an ellipsis when
// cut.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// WriteFile writes the cursor to path, atomically: a temporary file
// beside it, synced, then renamed over it, so that the file never names a
// record not sent, whenever the process stops. Only the sessions keep
// reports true for are written (those still in the store), so the file
// stays the size of the store's list.
func (c *Cursor) WriteFile(path string, keep func(sessions.SessionID) bool) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriter(tmp)
	fmt.Fprintln(w, CursorHeader)
	if c.upTo != 0 {
		fmt.Fprintf(w, "upto %d\n", c.upTo)
	}
	for _, id := range slices.Sorted(func(yield func(sessions.SessionID) bool) {
		for id := range c.sent {
			if keep(id) && !yield(id) {
				return
			}
		}
	}) {
		fmt.Fprintf(w, "%d %s\n", id, c.sent[id])
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// seqRange is the seqs lo..hi, both included.
type seqRange struct{ lo, hi uint64 }

// seqSet is a set of seqs as sorted, disjoint, non-adjacent ranges.
type seqSet []seqRange

// parseSeqSet reads a set as String writes it: "0-149,152".
func parseSeqSet(s string) (seqSet, bool) {
	var set seqSet
	for r := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.ParseUint(lo, 10, 64)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.ParseUint(hi, 10, 64)
		}
		if err1 != nil || err2 != nil || b < a {
			return nil, false
		}
		set = set.union(seqSet{{a, b}})
	}
	return set, true
}

// has reports whether seq is in the set.
func (s seqSet) has(seq uint64) bool {
	i, _ := slices.BinarySearchFunc(s, seq, func(r seqRange, seq uint64) int {
		switch {
		case r.hi < seq:
			return -1
		case r.lo > seq:
			return 1
		}
		return 0
	})
	return i < len(s) && s[i].lo <= seq && seq <= s[i].hi
}

// union returns the seqs of both sets.
func (s seqSet) union(o seqSet) seqSet {
	all := slices.SortedFunc(slices.Values(slices.Concat(s, o)), func(a, b seqRange) int {
		switch {
		case a.lo < b.lo:
			return -1
		case a.lo > b.lo:
			return 1
		}
		return 0
	})
	var out seqSet
	for _, r := range all {
		if n := len(out); n > 0 && (out[n-1].hi == ^uint64(0) || r.lo <= out[n-1].hi+1) {
			out[n-1].hi = max(out[n-1].hi, r.hi)
			continue
		}
		out = append(out, r)
	}
	return out
}

// add adds seq, which is above every seq in the set or in it already (as
// a replay in stamp order gives them).
func (s *seqSet) add(seq uint64) {
	if n := len(*s); n > 0 && seq <= (*s)[n-1].hi+1 && seq >= (*s)[n-1].lo {
		(*s)[n-1].hi = max((*s)[n-1].hi, seq)
		return
	}
	*s = s.union(seqSet{{seq, seq}})
}

func (s seqSet) String() string {
	parts := make([]string, len(s))
	for i, r := range s {
		if r.lo == r.hi {
			parts[i] = strconv.FormatUint(r.lo, 10)
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r.lo, r.hi)
		}
	}
	return strings.Join(parts, ",")
}
