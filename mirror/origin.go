package mirror

import (
	"strconv"
	"strings"
)

// The origin header is the mirror's only record of what it copied: every
// copy carries, as its last hop, the source cluster, partition and offset
// it was copied from ("dc1/3/1042"). A record copied again by a mirror out
// of the target gains a hop ("dc1/3/1042,analysis/0/77"), so the first hop
// always names where the record was produced. Because the target holds this
// for every copy, the mirror keeps no offsets anywhere: where to resume is
// read from the target itself (see tail.go).

// hop is one step of a record's journey: the cluster it was in, and the
// partition and offset it had there (-1 for a hop written by an older
// mirror, which named the cluster only).
type hop struct {
	cluster   string
	partition int32
	offset    int64
}

func (h hop) String() string {
	if h.partition < 0 {
		return h.cluster
	}
	return h.cluster + "/" + strconv.FormatInt(int64(h.partition), 10) + "/" + strconv.FormatInt(h.offset, 10)
}

// appendHop returns the header value of a copy: the record's own hops, if
// it has some, followed by h.
func appendHop(prev []byte, h hop) []byte {
	out := make([]byte, 0, len(prev)+len(h.cluster)+24)
	if len(prev) > 0 {
		out = append(out, prev...)
		out = append(out, ',')
	}
	return append(out, h.String()...)
}

// lastHop parses the last hop of a header value. ok is false for a value
// that is not an origin header written by a mirror.
func lastHop(v []byte) (h hop, ok bool) {
	s := string(v)
	if i := strings.LastIndexByte(s, ','); i >= 0 {
		s = s[i+1:]
	}
	return parseHop(s)
}

func parseHop(s string) (hop, bool) {
	name, rest, found := strings.Cut(s, "/")
	if validName("", name) != nil {
		return hop{}, false
	}
	if !found {
		return hop{cluster: name, partition: -1, offset: -1}, true
	}
	ps, os, found := strings.Cut(rest, "/")
	p, err1 := strconv.ParseInt(ps, 10, 32)
	o, err2 := strconv.ParseInt(os, 10, 64)
	if !found || err1 != nil || err2 != nil || p < 0 || o < 0 {
		return hop{}, false
	}
	return hop{cluster: name, partition: int32(p), offset: o}, true
}

// visited reports whether a header value names cluster in any hop: such a
// record was in that cluster before, and is not copied back into it.
func visited(v []byte, cluster string) bool {
	for s := range strings.SplitSeq(string(v), ",") {
		if h, ok := parseHop(s); ok && h.cluster == cluster {
			return true
		}
	}
	return false
}

// firstHop names the cluster a record was first produced in.
func firstHop(v []byte) string {
	s, _, _ := strings.Cut(string(v), ",")
	name, _, _ := strings.Cut(s, "/")
	return name
}
