package cborwire

// The keys of a stored record (docs/FORMAT.md §3.2), for encoders that
// write one by hand. Each group is in the order core deterministic
// encoding sorts its keys (CompareKeys), which is the order an encoder
// writes the keys a record has. Which keys are left out, and when, is the
// format's: FORMAT.md says, and the reference encoder in package sessions
// decides.
const (
	// A stamped record: {stamp, record}.
	KeyStamp  = "stamp"
	KeyRecord = "record"

	// Its stamp, every key always there.
	KeySeq     = "seq"
	KeySession = "session"
	KeyOffset  = "offset_ns"

	// Its body.
	KeyName          = "name"
	KeyAttrs         = "attrs"
	KeyLinks         = "links"
	KeyScope         = "scope"
	KeyEffect        = "effect"
	KeyEvents        = "events"
	KeyInputs        = "inputs"
	KeyStatus        = "status"
	KeySpanID        = "span_id"
	KeyWall          = "wall_ns"
	KeyTraceID       = "trace_id"
	KeySpanKind      = "span_kind"
	KeyTraceState    = "trace_state"
	KeyDroppedAttrs  = "dropped_attrs"
	KeyDroppedLinks  = "dropped_links"
	KeyDroppedEvents = "dropped_events"
	KeyParentSpanID  = "parent_span_id"

	// An event is {name, attrs, offset_ns} (KeyName, KeyAttrs, KeyOffset);
	// a link {attrs, span_id, trace_id, trace_state}; a scope {name,
	// version}; a status {code, description}.
	KeyVersion     = "version"
	KeyCode        = "code"
	KeyDescription = "description"
)
