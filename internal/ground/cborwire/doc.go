// Package cborwire writes and reads, by hand, the CBOR (RFC 8949) items a
// store's values are made of, byte for byte as the reference codec writes
// them: fxamacker/cbor with its core deterministic options
// (cbor.CoreDetEncOptions), which docs/FORMAT.md §3 describes. It exists
// because the reference finds its way through a record by reflection,
// and that is most of what encoding a span and reading a record cost: a
// hand-written encoder or decoder of one shape, built on these
// primitives, does the same work without it, and a differential fuzz
// target against the library keeps the two in step.
//
// Writing is append-style, as strconv's Append functions are: each
// function appends one item, or one head, to dst and returns the extended
// slice, so an encoder grows one buffer and allocates nothing else. What
// it writes is the preferred, deterministic form: the shortest head for
// every argument, definite lengths, the shortest float that keeps a
// value, and map keys in the order SortKeys gives.
//
// Reading is a Reader over a byte slice: it decodes heads and yields the
// contents of strings as pieces of that slice, so it allocates nothing
// either. It checks what it reads can be read (a head cut short, a
// reserved additional information), and no more: what an item means, and
// whether it is in the form a writer makes, is its caller's to decide.
//
// A store is untrusted input, so reading one has bounds, kept here where
// the items are read: the decode limits (nesting, array and map lengths),
// and a budget of what decoding a value may allocate, which CheckBudget
// walks a value for before a library decodes it, and which a Decoder, the
// Reader a hand-written decoder is built on, charges item by item as it
// reads. Writers ask the same budget of what they encode, so that nothing
// is written that a reader would refuse.
package cborwire
