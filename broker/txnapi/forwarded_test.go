package txnapi

import (
	"fmt"
	"testing"

	"github.com/tributary-io/tributary/broker/txn"
)

// The forwarded offsets a group's coordinator remembers stay bounded: past
// maxForwarded a new partition is not remembered, a partition already
// held is replaced in place, and dropping entries frees room.
func TestForwardedOffsetsAreBounded(t *testing.T) {
	var f forwardedTxns
	ft := forwardedTxn{id: "id", pid: 1, start: 10}
	for i := range maxForwarded {
		if !f.add(fmt.Sprintf("g%d", i%100), []txn.TP{{Topic: "t", Partition: int32(i)}}, ft) {
			t.Fatalf("entry %d not kept below the bound", i)
		}
	}
	if f.add("g0", []txn.TP{{Topic: "t", Partition: -1}}, ft) {
		t.Fatal("an entry past maxForwarded was kept")
	}
	if !f.add("g0", []txn.TP{{Topic: "t", Partition: 0}}, forwardedTxn{id: "id", pid: 1, start: 20}) {
		t.Fatal("replacing a held partition's entry was refused at the bound")
	}
	if f.n != maxForwarded || f.m["g0"][txn.TP{Topic: "t", Partition: 0}].start != 20 {
		t.Fatalf("after the replace: %d entries, g0's %+v", f.n, f.m["g0"][txn.TP{Topic: "t", Partition: 0}])
	}
	f.mu.Lock()
	f.dropLocked("g0", txn.TP{Topic: "t", Partition: 0})
	f.dropLocked("g0", txn.TP{Topic: "t", Partition: 0}) // twice: counted once
	f.mu.Unlock()
	if f.n != maxForwarded-1 || !f.add("g0", []txn.TP{{Topic: "t", Partition: -1}}, ft) {
		t.Fatalf("a dropped entry did not free room: %d entries", f.n)
	}
}
