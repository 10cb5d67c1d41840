//go:build linux && (amd64 || arm64)

package space

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/otelrecords/otelrecords/internal/testkit/testsupport"
)

// sigbusEnv, set in the environment of this test binary, makes
// TestSigbusGivesTheReserve the child that faults: "covered" with a
// reserve in the handler's hands, "bare" without.
const sigbusEnv = "SPACE_TEST_SIGBUS"

// TestSigbusSlotLayout checks the offsets at which the handler reads a
// slot (sigbus_linux_*.s: fd, size, busy; 24 bytes a slot).
func TestSigbusSlotLayout(t *testing.T) {
	var s sigbusSlot
	if o := [4]uintptr{unsafe.Offsetof(s.fd), unsafe.Offsetof(s.size), unsafe.Offsetof(s.busy), unsafe.Sizeof(s)}; o != [4]uintptr{0, 8, 16, 24} {
		t.Fatalf("fd, size, busy at %d, %d, %d, %d bytes a slot; the handler reads them at 0, 8, 16, 24 bytes a slot", o[0], o[1], o[2], o[3])
	}
}

// TestSigbusGivesTheReserve writes 2 MiB through a map of a sparse file on
// a full tmpfs, as Badger writes a table, in a child process. Without a
// reserve in the handler's hands the child dies of SIGBUS (what Badger
// did to its host); with a reserve of 3 MiB, the handler gives back a
// chunk at each fault, the writes go on, and the child ends normally with
// 1 MiB of reserve left.
func TestSigbusGivesTheReserve(t *testing.T) {
	if how := os.Getenv(sigbusEnv); how != "" {
		sigbusChild(how, os.Getenv("SPACE_TEST_DIR"))
		return
	}
	mnt := filepath.Join(t.TempDir(), "mnt")
	testsupport.MountTmpfs(t, mnt, "16m")
	run := func(how string) ([]byte, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSigbusGivesTheReserve$")
		cmd.Env = append(os.Environ(), sigbusEnv+"="+how, "SPACE_TEST_DIR="+mnt)
		return cmd.CombinedOutput()
	}
	out, err := run("bare")
	if err == nil || !regexp.MustCompile(`signal SIGBUS`).Match(out) {
		t.Fatalf("without a reserve: %v\n%.2000s\nwant the child killed by SIGBUS, as Badger's writes on a full disk were", err, out)
	}
	for _, name := range []string{"filler", "table"} {
		if err := os.Remove(filepath.Join(mnt, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, err = run("covered")
	m := regexp.MustCompile(`wrote (\d+) bytes; released (\d+); left (\d+)`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("with a reserve: %v\n%.4000s\nwant the writes done", err, out)
	}
	released, _ := strconv.Atoi(string(m[2]))
	left, _ := strconv.Atoi(string(m[3]))
	t.Logf("%s", m[0])
	if released != 2 || left != 1<<20 {
		t.Errorf("released %d chunks, %d bytes left; want 2 chunks of the 3 MiB given for the 2 MiB written, 1 MiB left", released, left)
	}
}

// sigbusChild fills the tmpfs at mnt, holding a reserve of 3 MiB there
// (covered) or not (bare), then writes 2 MiB through a map of a new
// sparse file.
func sigbusChild(how, mnt string) {
	fail := func(err error) {
		_, file, line, _ := runtime.Caller(1)
		fmt.Printf("child: %s:%d: %v\n", filepath.Base(file), line, err)
		os.Exit(3)
	}
	if how == "covered" {
		f, err := os.Create(filepath.Join(mnt, "reserve"))
		if err != nil {
			fail(err)
		}
		if err := unix.Fallocate(int(f.Fd()), 0, 0, 3<<20); err != nil {
			fail(err)
		}
		r := coverReserve(f)
		if r == nil {
			fail(fmt.Errorf("no handler"))
		}
		r.refill(0, 3<<20)
	}
	fill, err := os.Create(filepath.Join(mnt, "filler"))
	if err != nil {
		fail(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := fill.Write(chunk); err != nil {
			break
		}
	}
	const size = 2 << 20
	f, err := os.Create(filepath.Join(mnt, "table"))
	if err != nil {
		fail(err)
	}
	if err := f.Truncate(size); err != nil {
		fail(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		fail(err)
	}
	for i := range data {
		data[i] = byte(i)
	}
	left := int64(0)
	if how == "covered" {
		left = sigbusReserves[0].size.Load()
	}
	fmt.Printf("wrote %d bytes; released %d; left %d\n", len(data), sigbusReleases.Load(), left)
	os.Exit(0)
}

// TestSigbusGoesOnToGo checks that the handler leaves every other SIGBUS
// to Go's: a write through a map past the end of a file truncated under
// it (BUS_ADRERR, on a file system with room) panics where
// debug.SetPanicOnFault asks for it, as it did without the handler, and a
// reserve on that file system is left whole.
func TestSigbusGoesOnToGo(t *testing.T) {
	dir := t.TempDir()
	r, err := os.Create(filepath.Join(dir, "reserve"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := unix.Fallocate(int(r.Fd()), 0, 0, 2<<20); err != nil {
		t.Skipf("fallocate: %v", err)
	}
	res := coverReserve(r)
	if res == nil {
		t.Fatal("no handler")
	}
	res.refill(0, 2<<20)
	defer func() { res.take(); res.uncover() }()
	f, err := os.Create(filepath.Join(dir, "mapped"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(1 << 16); err != nil {
		t.Fatal(err)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, 1<<16, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	before := sigbusReleases.Load()
	fault := func() (got any) {
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() { got = recover() }()
		data[1<<12] = 1
		return nil
	}()
	if e, ok := fault.(runtime.Error); !ok {
		t.Fatalf("writing past the end of the file: recovered %v, want a runtime.Error from Go's handler", fault)
	} else {
		t.Logf("Go's handler: %v", e)
	}
	if got := sigbusReleases.Load(); got != before || res.size() != 2<<20 {
		t.Errorf("the handler gave back %d chunks, reserve %d bytes; want none given for a fault on a file system with room", got-before, res.size())
	}
}
