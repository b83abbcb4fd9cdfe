package acl

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestACLFileConcurrentUpdates: CreateAcls requests from different
// connections update acls.json at once; each update reads, changes and
// replaces the file, and none may be lost.
func TestACLFileConcurrentUpdates(t *testing.T) {
	store := NewFile(filepath.Join(t.TempDir(), "acls.json"))
	const writers, each = 8, 10
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				acl := ACL{Principal: fmt.Sprintf("User:w%d-%d", w, i), Host: "*",
					ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: "t", PatternType: kmsg.ACLResourcePatternTypeLiteral,
					Operation: kmsg.ACLOperationRead, Permission: kmsg.ACLPermissionTypeAllow}
				if _, err := store.update(func(acls []ACL) []ACL { return append(acls, acl) }); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	acls, err := store.load()
	if err != nil {
		t.Fatal(err)
	}
	if len(acls) != writers*each {
		t.Fatalf("%d ACLs stored, want %d: concurrent updates were lost", len(acls), writers*each)
	}
}
