package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// A group whose last committed offset is deleted stays listed, Empty, for
// EmptiedGroupListed, as Kafka keeps it until its cleanup runs; it used to
// vanish at once, and describing it said Dead.
func TestEmptiedGroupStaysListed(t *testing.T) {
	h := newHarness(t, Config{})
	tp := TopicPartition{"t", 0}
	if err := h.c.Commit(CommitRequest{Group: "g", Generation: -1, Offsets: map[TopicPartition]Offset{tp: {Offset: 5}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.c.DeleteOffsets("g", []TopicPartition{tp}); err != nil {
		t.Fatal(err)
	}
	listed := func() bool {
		list, err := h.c.List()
		if err != nil {
			t.Fatal(err)
		}
		return len(list) == 1 && list[0].Name == "g" && list[0].State == Empty
	}
	state := func() State {
		d, err := h.c.Describe("g")
		if err != nil {
			t.Fatal(err)
		}
		return d.State
	}
	if !listed() || state() != Empty {
		t.Fatalf("right after its last offset was deleted: listed %v, state %v; want listed, Empty", listed(), state())
	}
	// Deleting offsets of it again finds the group (nothing to delete).
	if _, err := h.c.DeleteOffsets("g", []TopicPartition{tp}); err != nil {
		t.Fatalf("deleting offsets of the emptied group: %v", err)
	}
	h.advance(EmptiedGroupListed - time.Second)
	if !listed() {
		t.Fatal("forgotten before EmptiedGroupListed")
	}
	h.advance(2 * time.Second)
	if listed() || state() != Dead {
		t.Fatalf("after EmptiedGroupListed: listed %v, state %v; want gone, Dead", listed(), state())
	}
	if _, err := h.c.DeleteOffsets("g", []TopicPartition{tp}); err != kerr.GroupIDNotFound {
		t.Fatalf("deleting offsets of a forgotten group: %v, want GROUP_ID_NOT_FOUND", err)
	}
}

// The last member leaving a group that never committed leaves it listed
// too, and DeleteGroups removes it at once.
func TestGroupLeftByItsLastMemberStaysListedUntilDeleted(t *testing.T) {
	h := newHarness(t, Config{})
	res := got(t, h.join("", protocols("range")...))
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if err, _ := h.c.Leave("g", []LeaveMember{{MemberID: res.MemberID}}); err != nil {
		t.Fatal(err)
	}
	h.advance(time.Second)
	list, _ := h.c.List()
	if len(list) != 1 || list[0].State != Empty {
		t.Fatalf("after its last member left: %+v, want g listed Empty", list)
	}
	if err := h.c.Delete("g"); err != nil {
		t.Fatalf("deleting the emptied group: %v", err)
	}
	if list, _ := h.c.List(); len(list) != 0 {
		t.Fatalf("after DeleteGroups: %+v, want none", list)
	}
}
