package explain

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/otelrecords/otelrecords/sessions"
)

// heldValueMax is the longest string value a Side holds as it is: a
// record's value may be megabytes, and a diff holds one record per key.
const heldValueMax = 1 << 10

// heldAttrs returns attrs as a Side holds them: a copy of their own (a
// decoded record's strings are pieces of one copy of its whole value, and
// would keep it alive), every string value longer than heldValueMax
// replaced by its first heldValueMax bytes, its length and a digest of the
// whole. Two long values compare equal held when they were equal whole
// (but for a collision of SHA-256), and the text shows a person which.
func heldAttrs(attrs sessions.Attrs) sessions.Attrs {
	if attrs == nil {
		return nil
	}
	out := make(sessions.Attrs, len(attrs))
	for i, kv := range attrs {
		v := kv.Value
		if s, ok := v.Any().(string); ok {
			v = sessions.StringValue(heldString(s))
		}
		out[i] = sessions.Attr{Key: strings.Clone(kv.Key), Value: v}
	}
	return out
}

// heldString returns s as heldAttrs holds a string value.
func heldString(s string) string {
	if len(s) <= heldValueMax {
		return strings.Clone(s)
	}
	i := heldValueMax
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s… [%d bytes, sha256 %s]", s[:i], len(s), hex.EncodeToString(sum[:8]))
}
