package badgerstore

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/dgraph-io/badger/v4"

	"github.com/otelrecords/otelrecords/internal/store/space"
)

// The footprint of the Badger database a Store opens. Badger's defaults
// serve a database server; a Store is a guest in a host process that writes
// a few records per operation, so each value is the smallest that keeps
// writes and scans fast. Most of a writing Store's memory is Badger's table
// builders (each starts with twice its table's size and compresses blocks
// beside it) and its memtables, so the sizes below bound those. Measured with
// bench/cmd/footprint at 20,000 records/s for 10 s, these values hold a
// writing store to about half the peak RSS of 8 MiB memtables, 2 MiB
// tables and five level-0 tables, for about 10% more CPU per record
// (BENCHMARKS.md, figure 5).
const (
	// memTableSize is the size of one memtable, Badger's write buffer
	// (Badger's default: 64 MiB). A memtable is mapped twice its size in its
	// log file, and is the unit flushed to a level-0 table. The table
	// builder of a flush grows to a few times it, and Badger keeps up to 8
	// of its builders' buffers for reuse: 1 MiB costs about 3% more CPU per
	// record than 2 MiB, and 13-21 MB less peak RSS (69-75 MB against
	// 88-90 MB with bench/cmd/footprint).
	memTableSize = 1 << 20

	// numMemtables is how many full memtables may wait to flush while
	// writes go on into another (Badger's default, 5); one more may be
	// flushing. A flush msyncs its new table, and while a disk stalls it,
	// writes block once these are all full: so this is how long a stall
	// the writes ride out. A stall longer than that plus the exporter's
	// wait for progress on a full queue drops spans. Under 8 goroutines
	// ending spans as fast as they can, with every 50th msync delayed by
	// strace and the wait at 100 ms: with 2, stalls of 100 ms dropped none
	// and 150 ms dropped in every run (17,997-138,922 spans); with 5, 150
	// ms dropped none and 200 ms in half the runs (with the wait at 250
	// ms, 200 ms dropped none). So three memtables more ride out about 50
	// ms more of such a burst: a longer stall still drops, and each
	// memtable more holds one more 1 MiB arena behind it. They fill only
	// behind a stall: the peak RSS of figure 5 was the same (BENCHMARKS.md,
	// figure 4; TestWritesGoOnBehindAStalledFlush).
	numMemtables = 5

	// valueThreshold is the size from which a value is kept in the value
	// log rather than inline beside its key (Badger's default: 1 MiB).
	// Records are small, so nearly all stay inline, where a scan reads them
	// without a second lookup. Badger requires it to be at most 15% of
	// memTableSize (its largest transaction): 128 KiB <= 153 KiB.
	valueThreshold = 128 << 10

	// baseTableSize is the size of a table below level 0 (Badger's
	// default: 2 MiB). A compaction holds several table builders at once,
	// each starting at twice this size, so smaller tables bound its memory;
	// below 512 KiB the count of tables, and of builders, grows faster than
	// they shrink.
	baseTableSize = 512 << 10

	// numLevelZeroTables is how many level-0 tables (flushed memtables)
	// wait before they are compacted into the next level (Badger's default:
	// 5): a compaction of fewer tables holds fewer builders.
	numLevelZeroTables = 3

	// numLevelZeroTablesStall is how many level-0 tables stop writes until
	// compaction catches up (Badger's default: 15). Small memtables make
	// level-0 tables eight times as fast as 8 MiB ones did; under a burst
	// (8 goroutines ending spans as fast as they can) compaction fell
	// behind, and a stall outlasted the exporter's wait on a full queue, so
	// spans were dropped (TestEightGoroutinesDropNothing: at 15 tables in
	// every run with 2 MiB memtables; with 1 MiB at 40 in two runs of five,
	// at 100 in none of five). Waiting
	// tables cost disk and mapped pages, not heap, and at a steady rate
	// compaction keeps level 0 at a few tables.
	numLevelZeroTablesStall = 100

	// valueLogFileSize is the size of one value-log file (Badger's default:
	// 1 GiB, mapped twice over). It also bounds the largest value a Store
	// takes.
	valueLogFileSize = 16 << 20

	// blockSize is the size of a block of a table (Badger's default: 4
	// KiB): a table's unit of compression and checksum, and an entry of
	// its index. A Write's entries are mostly chunks of up to
	// chunk.MaxBytes of values, which 4 KiB blocks held one to a block,
	// each block larger than the block buffers Badger's builders size
	// for; at 16 KiB, the 30 s steady run of figure 5 peaked at 40.5-41.4
	// MiB of anonymous memory against 49.4-69.4 with 4 KiB blocks (VmHWM
	// 84-87 against 93-117 MB), at the same CPU a kept record (figure 3
	// kept vs raw Badger 0.56-0.57x against 0.48-0.63x). Tables written
	// with other block sizes read the same: a block's bounds are in the
	// table's index.
	blockSize = 16 << 10

	// blockCacheSize is the cache of decompressed table blocks (Badger's
	// default: 256 MiB). Tables are Snappy-compressed, Badger's default, and
	// Badger refuses a zero cache with compression; a Store's reads are
	// scans, which read each block once.
	blockCacheSize = 1 << 20

	// indexCacheSize 0 keeps every table's index and bloom filter in memory
	// without a cache (Badger's default). A store of records has few tables,
	// so their indexes are small, and a cache would cost goroutines and
	// counters of its own.
	indexCacheSize = 0

	// numCompactors is how many goroutines compact the levels (Badger's
	// default: 4). Badger accepts 0 (no compaction, writes eventually stall)
	// or at least 2, one of which favours level 0.
	numCompactors = 2

	// numVersionsToKeep is how many versions of a key survive compaction: a
	// Store replaces, it never reads history.
	numVersionsToKeep = 1
)

// dirMode is the mode of a store directory Open creates: records carry
// whatever the host put in its spans, so only their owner reads them.
const dirMode = 0o700

// An Option configures Open.
type Option func(*config)

type config struct {
	readOnly bool
	handle   func(error)
	progress func(entries int)
}

// WithReadOnly opens the store for reading: any number of read-only Stores
// may share a directory, but none beside a read-write one. A read-only
// Open creates nothing, and fails with an error matching fs.ErrNotExist
// when there is no store at the directory. Write and DeleteRange return an
// error matching ErrReadOnly. Badger does not support read-only opens on
// Windows or Plan 9.
func WithReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// WithErrorHandler sends Badger's warnings and errors to handle, as errors
// whose message starts "otelrecords: badger warning:" or "otelrecords:
// badger error:". By default they are logged to slog.Default() at warn
// level. Badger's INFO and DEBUG lines are always
// dropped. Badger calls handle from its own goroutines, so it must be safe
// for concurrent use, and must not call back into the Store. A nil handle
// drops everything.
func WithErrorHandler(handle func(error)) Option {
	return func(c *config) {
		if handle == nil {
			handle = func(error) {}
		}
		c.handle = handle
	}
}

// WithWriteProgress has Write call progress as Badger takes a write's
// entries: every progressEvery entries, and for the rest when the write
// is done. Badger takes the entries of a write batch only as fast as it
// applies the earlier ones (each of its transactions waits for those
// before it), so progress comes while a write makes headway, however
// slowly on a loaded machine, and stops while Badger stalls (a memtable
// flush waiting for compaction, a disk that does not answer). A caller
// that waits on writes, as the exporter's span calls wait for room in a
// full queue, can tell the one from the other. Write calls progress on
// the goroutine that called Write, inside the write, so it must be cheap
// and must not call back into the Store.
func WithWriteProgress(progress func(entries int)) Option {
	return func(c *config) { c.progress = progress }
}

// progressEvery is how many entries WithWriteProgress reports at a time:
// about half of one of Badger's transactions of records (15% of
// memTableSize), so that each transaction a write commits shows.
const progressEvery = 256

// defaultErrorHandler logs err to slog.Default() at warn level, looking the
// logger up at each call so a later slog.SetDefault takes effect.
func defaultErrorHandler(err error) {
	slog.Default().Warn(err.Error())
}

// badgerOptions returns the options of the Badger database at dir, whose
// writes g guards (nil for a read-only open).
func badgerOptions(dir string, c config, g *space.Guard) badger.Options {
	return badger.DefaultOptions(dir).
		WithReadOnly(c.readOnly).
		WithLogger(logger{handle: c.handle, guard: g}).
		WithMemTableSize(memTableSize).
		WithNumMemtables(numMemtables).
		WithBlockSize(blockSize).
		WithValueThreshold(valueThreshold).
		WithBaseTableSize(baseTableSize).
		WithNumLevelZeroTables(numLevelZeroTables).
		WithNumLevelZeroTablesStall(numLevelZeroTablesStall).
		WithValueLogFileSize(valueLogFileSize).
		WithBlockCacheSize(blockCacheSize).
		WithIndexCacheSize(indexCacheSize).
		WithNumCompactors(numCompactors).
		WithNumVersionsToKeep(numVersionsToKeep).
		// A Store only writes blindly (WriteBatch never reads), so there is
		// nothing to conflict, and tracking commits for conflict checks would
		// only hold memory while a scan is open.
		WithDetectConflicts(false).
		// Badger's metrics are process-wide expvars the host did not ask for.
		WithMetricsEnabled(false)
}

// logger forwards Badger's warnings and errors to the error handler and
// drops the rest: Badger says a lot at INFO (every open, replay and
// compaction), and the host's stderr is not ours to fill. Its DEBUG lines
// that say Badger is about to write through its maps are the guard's
// hooks (internal/store/space).
type logger struct {
	handle func(error)
	guard  *space.Guard
}

func (l logger) Errorf(format string, args ...any)   { l.forward("error", format, args) }
func (l logger) Warningf(format string, args ...any) { l.forward("warning", format, args) }
func (logger) Infof(string, ...any)                  {}
func (l logger) Debugf(format string, args ...any)   { l.guard.Hook(format, args) }

func (l logger) forward(level, format string, args []any) {
	msg := strings.TrimSpace(fmt.Sprintf(format, args...))
	l.handle(errors.New("otelrecords: badger " + level + ": " + msg))
}
