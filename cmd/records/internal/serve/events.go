package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/otelrecords/otelrecords/cmd/records/internal/api"
	"github.com/otelrecords/otelrecords/cmd/records/internal/stores"
	"github.com/otelrecords/otelrecords/sessions"
)

// A session's page is live while the session is written: its script
// listens to the session's events (server-sent events), and the server
// reads the store every Config.Follow, as records watch does, telling
// the page how many records the session holds and the records stamped
// since it last looked. Each look counts the session's keys (no value is
// read) and reads only the records past the last seq it sent: a record
// written late with a lower seq (a mark that ends after what it holds)
// is counted, and drawn when the page is drawn again.

// liveMax bounds the records one look sends: the page shows the newest.
const liveMax = 50

// liveRecord is a record as the live view lists it.
type liveRecord struct {
	Seq      uint64  `json:"seq"`
	Kind     string  `json:"kind"`
	Name     string  `json:"name"`
	OffsetNs int64   `json:"offset_ns"`
	WallNs   int64   `json:"wall_ns"`
	Effect   *string `json:"effect"`
}

// heartbeat is how often a live view is sent a comment when nothing
// happens, so that proxies keep the stream open.
const heartbeat = 15 * time.Second

// events streams a session's records as they are written.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	id, err := sessionID(r)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	select {
	case s.live <- struct{}{}:
		defer func() { <-s.live }()
	default:
		http.Error(w, "records serve: too many live views at once", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	ctx := r.Context()
	var (
		count   = -1
		last    uint64
		started bool
		quiet   = time.Now()
	)
	tick := time.NewTicker(s.cfg.Follow)
	defer tick.Stop()
	for {
		var (
			n     int
			fresh []liveRecord
		)
		err := s.cfg.Stores.Read(ctx, func(all *sessions.Records, _ []stores.Store) error {
			for _, err := range all.Stamps(sessions.InSession(id)) {
				if err != nil {
					return err
				}
				n++
			}
			if n == count {
				return nil
			}
			if !started {
				// The page drew what is there: from the newest on.
				for st, err := range all.Stamps(sessions.InSession(id)) {
					if err != nil {
						return err
					}
					last = max(last, st.Seq)
				}
				return nil
			}
			kinds, err := all.Kinds()
			if err != nil {
				return err
			}
			for kr, err := range all.InStampOrder(kinds, sessions.InSessionFrom(id, last+1)) {
				if err != nil {
					return err
				}
				last = max(last, kr.Stamp.Seq)
				fresh = append(fresh, liveRecord{kr.Stamp.Seq, kr.Kind, cut(kr.Record.Name), int64(kr.Stamp.Offset), int64(kr.Record.Wall), api.Effect(&kr.Record)})
				if len(fresh) > liveMax {
					fresh = fresh[1:]
				}
			}
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		rc.SetWriteDeadline(time.Now().Add(writeTimeout))
		switch {
		case err != nil:
			// The store could not be read this time (a writer holding
			// on past the wait): look again at the next tick.
			fmt.Fprintf(w, ": %s\n\n", "store busy")
		case n != count:
			if started || count >= 0 {
				for _, rec := range fresh {
					b, _ := json.Marshal(rec)
					fmt.Fprintf(w, "event: record\ndata: %s\n\n", b)
				}
			}
			b, _ := json.Marshal(struct {
				Records int `json:"records"`
			}{n})
			fmt.Fprintf(w, "event: count\ndata: %s\n\n", b)
			count, started, quiet = n, true, time.Now()
		case time.Since(quiet) > heartbeat:
			fmt.Fprint(w, ": quiet\n\n")
			quiet = time.Now()
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
