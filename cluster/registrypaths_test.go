package cluster

import "testing"

// The registries kept by broker packages live where the layout comment in
// zkpaths.go says, and a user name with '/' is one node that reads back.
func TestRegistryPathsOfBrokerPackages(t *testing.T) {
	p := ZKPaths{Root: "/t"}
	for got, want := range map[string]string{
		p.Consumers():             "/t/consumers",
		p.GroupOffsets("g"):       "/t/consumers/g/offsets",
		p.User("ops/a@example.c"): "/t/config/users/ops%2Fa@example.c",
	} {
		if got != want {
			t.Errorf("path %q, want %q", got, want)
		}
	}
	if got, err := UserName("ops%2Fa@example.c"); err != nil || got != "ops/a@example.c" {
		t.Errorf("UserName = %q, %v", got, err)
	}
	if _, err := UserName("%zz"); err == nil {
		t.Error("UserName accepted a node User cannot have written")
	}
}
