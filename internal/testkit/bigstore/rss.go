// Peak anonymous memory of a child process: what a command holds (Go's
// heap, Badger's caches and tables), without the store's files that Badger
// maps, which the kernel drops when it needs the memory.

package bigstore

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"time"
)

// RunPeakAnon runs cmd (it must not be started) and returns the largest
// RssAnon of /proc/<pid>/status seen while it ran, sampled every 2 ms,
// with its error from Wait. A peak shorter than a sample may be missed,
// so a bound checked with it should leave room; a Go heap grows by doubling
// and gives memory back slowly, so what a command holds long is seen.
func RunPeakAnon(cmd *exec.Cmd) (int64, error) {
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
	var peak int64
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		if v, err := statusField(status, "RssAnon"); err == nil {
			peak = max(peak, v)
		}
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
		}
	}
}

// statusField returns a field of a /proc status file, in bytes.
func statusField(path, name string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(name+":")) {
			continue
		}
		f := bytes.Fields(line[len(name)+1:])
		if len(f) < 1 {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, err
		}
		return kb << 10, nil
	}
	return 0, errors.New(name + " not in " + path)
}

// SamplePeakAnon samples the RssAnon of the running process pid every
// 2 ms, as RunPeakAnon does, until the returned stop is called, which
// returns the largest seen: the peak of a server while it answers.
func SamplePeakAnon(pid int) (stop func() int64) {
	status := fmt.Sprintf("/proc/%d/status", pid)
	done, peak := make(chan struct{}), make(chan int64, 1)
	go func() {
		var p int64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			if v, err := statusField(status, "RssAnon"); err == nil {
				p = max(p, v)
			}
			select {
			case <-done:
				peak <- p
				return
			case <-tick.C:
			}
		}
	}()
	return func() int64 {
		close(done)
		return <-peak
	}
}
