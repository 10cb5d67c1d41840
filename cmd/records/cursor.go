package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/otelrecords/otelrecords/replay"
	"github.com/otelrecords/otelrecords/sessions"
)

// cursorHeader opens a cursor file of this layout: then one line per
// session, its id and the seqs of its records sent, as ranges
// ("1735787045006000000 0-149,152").
const cursorHeader = "# records replay cursor v2: session id, then the seqs of its records the backend accepted"

// seqRange is the seqs lo..hi, both included.
type seqRange struct{ lo, hi uint64 }

// seqSet is a set of seqs as sorted, disjoint, non-adjacent ranges: a
// session's records are stamped in order, so what was sent of it is a
// range or a few.
type seqSet []seqRange

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

// cursor is what a cursor file says was sent: every record of the
// sessions at or below upTo (what a cursor of an older records, which
// named the newest session sent, meant), and the seqs sent of each
// session.
type cursor struct {
	upTo sessions.SessionID
	sent map[sessions.SessionID]seqSet
}

// has reports whether the record stamped st was sent.
func (c *cursor) has(st sessions.Stamp) bool {
	return st.Session <= c.upTo || c.sent[st.Session].has(st.Seq)
}

// readCursor reads the cursor file at path; a file that does not exist
// yet names nothing sent.
func readCursor(path string) (*cursor, error) {
	c := &cursor{sent: map[sessions.SessionID]seqSet{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the cursor: %w", err)
	}
	bad := func(why string) error {
		return fmt.Errorf("the cursor %s does not name what was sent (%s; it holds %q)", clean(path), why, truncate(string(b), 40))
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
		var set seqSet
		for r := range strings.SplitSeq(f[1], ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.ParseUint(lo, 10, 64)
			b, err2 := a, error(nil)
			if isRange {
				b, err2 = strconv.ParseUint(hi, 10, 64)
			}
			if err1 != nil || err2 != nil || b < a {
				return nil, bad(fmt.Sprintf("line %d", n))
			}
			set = set.union(seqSet{{a, b}})
		}
		c.sent[sessions.SessionID(id)] = c.sent[sessions.SessionID(id)].union(set)
	}
	return c, nil
}

// write writes the cursor to path, atomically: a temporary file beside
// it, synced, then renamed over it, so that the file never names a record
// not sent, whenever the process stops. Sessions no longer in the store
// (keep) are left out, so the file stays the size of the store's list.
func (c *cursor) write(path string, keep map[sessions.SessionID]bool) (err error) {
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
	fmt.Fprintln(w, cursorHeader)
	if c.upTo != 0 {
		fmt.Fprintf(w, "upto %d\n", c.upTo)
	}
	for _, id := range slices.Sorted(func(yield func(sessions.SessionID) bool) {
		for id := range c.sent {
			if keep[id] && !yield(id) {
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

// runCursor sends the records the cursor file does not name as sent, a
// session at a time in id order, and names each session's in the file
// once the backend accepted all of them.
func (f *replayFlags) runCursor(ctx context.Context, cmd *cobra.Command, r *sessions.Records, exp sdktrace.SpanExporter, o replay.Options, bar *progressLine) error {
	c, err := readCursor(f.cursor)
	if err != nil {
		return err
	}
	// What is there to send: the stamps of the records not sent, read
	// from keys alone.
	unsent := map[sessions.SessionID]int{}
	inStore := map[sessions.SessionID]bool{}
	remain := 0
	for st, err := range r.Stamps() {
		if err != nil {
			return err
		}
		inStore[st.Session] = true
		if !c.has(st) {
			unsent[st.Session]++
			remain++
		}
	}
	if remain == 0 {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "nothing to replay: %s names every record of the store as sent\n", clean(f.cursor))
		return err
	}
	todo := slices.Sorted(func(yield func(sessions.SessionID) bool) {
		for id := range unsent {
			if !yield(id) {
				return
			}
		}
	})
	var sent, accepted, sessionsSent int
	for i, id := range todo {
		var now seqSet
		n := 0
		o.Sessions = []sessions.SessionID{id}
		o.Skip = func(st sessions.Stamp) bool {
			if c.has(st) {
				return true
			}
			now.add(st.Seq)
			sent++
			n++
			return false
		}
		o.Progress = func(p replay.Progress) {
			bar.show(replay.Progress{Sessions: i + p.Sessions, Total: len(todo), Spans: accepted + p.Spans})
		}
		p, err := replay.Replay(ctx, r, exp, o)
		accepted += p.Spans
		if errors.Is(err, replay.ErrNoSession) {
			continue // pruned since it was counted
		}
		if err != nil {
			bar.done()
			counts := fmt.Sprintf("sent %s, the backend accepted %d, %d remain", plural(sent, "record"), accepted, remain)
			if ctx.Err() != nil {
				return fmt.Errorf("interrupted while sending session %d to %s; %s: run again to send them", id, f.where(), counts)
			}
			return fmt.Errorf("sending session %d to %s failed: %w\n%s: run again to send them", id, f.where(), err, counts)
		}
		// Each session is flushed by its replay: it was accepted.
		c.sent[id] = c.sent[id].union(now)
		if err := c.write(f.cursor, inStore); err != nil {
			bar.done()
			return fmt.Errorf("session %d was sent, but the cursor could not name it (the next run sends it again): %w", id, err)
		}
		// Records written since they were counted were sent too.
		remain = max(remain-n, 0)
		sessionsSent++
	}
	bar.done()
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "replayed %s of %s to %s: sent %d, the backend accepted %d, %d remain; %s names them\n",
		plural(sent, "record"), plural(sessionsSent, "session"), f.where(), sent, accepted, remain, clean(f.cursor))
	return err
}
