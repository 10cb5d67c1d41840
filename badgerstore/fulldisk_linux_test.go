package badgerstore

import (
	"bufio"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/otelrecords/otelrecords/internal/store/space"
	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
	"github.com/otelrecords/otelrecords/sessions"
)

// fullDiskEnv, set in the environment of this test binary, makes
// TestFullDiskNeverCrashesTheWriter the writer child, writing the store
// in the directory it names.
const fullDiskEnv = "BADGERSTORE_TEST_FULLDISK"

// fullDiskKeys is how many keys the child writes over and over: the store
// stays about this many KiB, whatever the run's length.
const fullDiskKeys = 16384

// fullDiskRate is how many writes a second the child makes, at most.
const fullDiskRate = 20

// TestFullDiskNeverCrashesTheWriter runs a writer process that writes
// batches of 256 random 1 KiB values, 20 a second (5 MiB/s), closing and
// reopening the store every 40 batches (as a shared writer does), while
// another process (dd) fills the tmpfs holding it to 0 bytes free at
// random moments, holds it full for 0.1 to 0.6 s, and removes its file:
// OTELRECORDS_TEST_FILLS times (12 by default). Badger's flushes,
// compactions and closes then meet a full disk in every way they can.
// The writer must not crash (before the guard, it died of SIGBUS at one
// of the first fills); writes refused for want of space are refused with
// ErrNoSpace and tried again; once the space is back for good, writes
// succeed; and every value a Write acknowledged is in the store (or a
// later one of its key).
func TestFullDiskNeverCrashesTheWriter(t *testing.T) {
	if dir := os.Getenv(fullDiskEnv); dir != "" {
		fullDiskChild(dir)
		return
	}
	if !space.HandlerAvailable() {
		t.Skip("no SIGBUS handler for this architecture: a fill may still crash the writer (space.go)")
	}
	fills := testsupport.Fills(t, 12)
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "256m")
	dir := filepath.Join(mnt, "store")

	cmd := exec.Command(os.Args[0], "-test.run=^TestFullDiskNeverCrashesTheWriter$")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+dir)
	stop, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(out)
		lines <- string(b)
	}()
	exited := make(chan error, 1)
	go func() {
		s := <-lines
		exited <- cmd.Wait()
		lines <- s
	}()

	for i := range fills {
		time.Sleep(time.Duration(100+mrand.IntN(900)) * time.Millisecond)
		select {
		case err := <-exited:
			t.Fatalf("the writer exited after %d fills: %v\n%s%.3000s", i, err, <-lines, stderr.String())
		default:
		}
		filler := testsupport.FillFromOutside(t, mnt)
		time.Sleep(time.Duration(100+mrand.IntN(500)) * time.Millisecond)
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Second) // writes with the space back
	stop.Close()
	var report string
	select {
	case err = <-exited:
		report = <-lines
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("the writer did not stop; stderr:\n%.3000s", stderr.String())
	}
	if err != nil || strings.Contains(stderr.String(), "SIGBUS") {
		t.Fatalf("after %d fills the writer ended with %v\n%s%.4000s", fills, err, report, stderr.String())
	}
	m := regexp.MustCompile(`done: (\d+) writes, (\d+) refused, (\d+) opens refused, (\d+) opens, (\d+) written after the last refusal`).FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("the writer's report: %q; stderr:\n%.3000s", report, stderr.String())
	}
	t.Logf("%d fills to 0 bytes free: %s", fills, m[0])
	t.Logf("%s", regexp.MustCompile(`last refusal: .*`).FindString(report))
	if refused, _ := strconv.Atoi(m[2]); refused == 0 {
		t.Errorf("no write was refused: the disk never filled under the writer")
	}
	if after, _ := strconv.Atoi(m[5]); after == 0 {
		t.Errorf("no write succeeded once the space was back")
	}

	// Every acknowledged value, or a later one of its key, is there.
	acked := map[string]uint64{}
	for line := range strings.Lines(report) {
		if k, seq, ok := strings.Cut(strings.TrimSpace(line), " "); ok && strings.HasPrefix(k, "k") {
			n, _ := strconv.ParseUint(seq, 10, 64)
			acked[k] = n
		}
	}
	got := readAll(t, dir)
	for k, seq := range acked {
		v, ok := got[k]
		if !ok || len(v) < 8 || binary.BigEndian.Uint64(v) < seq {
			t.Errorf("key %s: acknowledged at write %d, store holds %x", k, seq, v[:min(len(v), 8)])
		}
	}
	if len(acked) == 0 {
		t.Error("nothing was acknowledged")
	}
}

// fullDiskChild writes into the store at dir until its stdin closes, then
// writes until one write succeeds, and prints its counts and, for each
// key, the last write that acknowledged it.
func fullDiskChild(dir string) {
	stopped := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stopped)
	}()
	open := func() (*Store, int) {
		for refused := 0; ; refused++ {
			s, err := Open(dir, WithErrorHandler(func(error) {}))
			if err == nil {
				return s, refused
			}
			if !errors.Is(err, ErrNoSpace) {
				fmt.Println("open:", err)
				os.Exit(3)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s, openRefused := open()
	opens := 1
	acked := make([]uint64, fullDiskKeys)
	var writes, refused, after int
	var lastRefusal error
	began := time.Now()
	entries := make([]sessions.Entry, 256)
	for seq := uint64(1); ; seq++ {
		select {
		case <-stopped:
			if after > 0 {
				if err := s.Close(); err != nil {
					fmt.Println("close:", err)
					os.Exit(3)
				}
				w := bufio.NewWriter(os.Stdout)
				fmt.Fprintf(w, "done: %d writes, %d refused, %d opens refused, %d opens, %d written after the last refusal\n", writes, refused, openRefused, opens, after)
				fmt.Fprintf(w, "last refusal: %v\n", lastRefusal)
				for k, n := range acked {
					if n > 0 {
						fmt.Fprintf(w, "k%05d %d\n", k, n)
					}
				}
				w.Flush()
				os.Exit(0)
			}
		default:
		}
		first := int(seq*uint64(len(entries))) % fullDiskKeys
		for i := range entries {
			v := make([]byte, 1024)
			rand.Read(v)
			binary.BigEndian.PutUint64(v, seq)
			entries[i] = sessions.Entry{Key: fmt.Appendf(nil, "k%05d", (first+i)%fullDiskKeys), Value: v}
		}
		time.Sleep(time.Until(began.Add(time.Duration(writes) * time.Second / fullDiskRate)))
		writes++
		if err := s.Write(entries); errors.Is(err, ErrNoSpace) {
			lastRefusal = err
			refused++
			after = 0
			time.Sleep(10 * time.Millisecond)
		} else if err != nil {
			fmt.Println("write:", err)
			os.Exit(3)
		} else {
			after++
			for i := range entries {
				acked[(first+i)%fullDiskKeys] = seq
			}
		}
		if writes%40 == 0 {
			if err := s.Close(); err != nil {
				fmt.Println("close:", err)
				os.Exit(3)
			}
			var n int
			s, n = open()
			openRefused += n
			opens++
		}
	}
}
