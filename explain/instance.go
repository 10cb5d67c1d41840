package explain

import (
	"slices"
	"strconv"
	"strings"

	"github.com/otelrecords/otelrecords/sessions"
)

// InstanceKeys are the Resource attributes that name the instance of a
// service a session ran as: one with a cache of its own. Two sessions
// whose values of one of them differ (one of them without it included)
// ran on two instances, and neither could find the other's work. The
// Resource of a remote session (through the Collector, or pulled from a
// backend) is its sender's, so a fleet read as one store tells its
// instances apart.
var InstanceKeys = []string{"service.instance.id", "host.name"}

// ServiceVersion returns the version of the service a session ran: its
// Resource's service.version, "" when it has none. For a sender's session
// (through a Collector, or pulled from a backend) it is the sender's; the
// row's Version is the otelrecords that wrote the session, which there is
// the Collector's.
func ServiceVersion(s sessions.Session) string {
	if v, ok := s.Resource.Get("service.version"); ok {
		return v.String()
	}
	return ""
}

// instanceOf returns what names the instance a session ran as: the values
// of its InstanceKeys, each with its length, or "-" where it lacks one. A
// session without a row (nil) names none, as a row without them.
func instanceOf(s *sessions.Session) string {
	var b strings.Builder
	for _, k := range InstanceKeys {
		v, ok := sessions.Value{}, false
		if s != nil {
			v, ok = s.Resource.Get(k)
		}
		if !ok {
			b.WriteString("-")
			continue
		}
		text := v.String()
		b.WriteString(strconv.Itoa(len(text)) + ":" + text)
	}
	return b.String()
}

// instanceDifferences returns the InstanceKeys whose values differ
// between the rows of two sessions, in key order.
func instanceDifferences(before, after *sessions.Session) []Difference {
	var b, a sessions.Attrs
	if before != nil {
		b = before.Resource
	}
	if after != nil {
		a = after.Resource
	}
	keys := map[string]bool{}
	instance := func(k string) bool { return slices.Contains(InstanceKeys, k) }
	addKeys(keys, b, instance)
	addKeys(keys, a, instance)
	return differences(keys, b, a)
}

// instances numbers the instances sessions ran as, so that a key's
// history holds a word for each rather than its name.
type instances map[string]int32

func (in *instances) id(name string) int32 {
	if *in == nil {
		*in = instances{}
	}
	id, ok := (*in)[name]
	if !ok {
		id = int32(len(*in))
		(*in)[name] = id
	}
	return id
}
