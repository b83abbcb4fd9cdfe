package cluster

import (
	"reflect"
	"testing"
)

func TestParseZKConnect(t *testing.T) {
	tests := []struct {
		connect string
		servers []string
		chroot  string
		err     bool
	}{
		{"127.0.0.1:2181", []string{"127.0.0.1:2181"}, "", false},
		{"127.0.0.1:2181/", []string{"127.0.0.1:2181"}, "", false},
		{"127.0.0.1:2181/tributary", []string{"127.0.0.1:2181"}, "/tributary", false},
		{"a:1,b:2,c:3/x/y", []string{"a:1", "b:2", "c:3"}, "/x/y", false},
		{"zk1,zk2/kafka", []string{"zk1:2181", "zk2:2181"}, "/kafka", false},
		{"[::1]:2181/t", []string{"[::1]:2181"}, "/t", false},
		{"", nil, "", true},
		{"/chroot", nil, "", true},
		{"h:1/a//b", nil, "", true},
		{"h:1/a/../b", nil, "", true},
	}
	for _, tt := range tests {
		servers, chroot, err := ParseZKConnect(tt.connect)
		if (err != nil) != tt.err {
			t.Errorf("ParseZKConnect(%q) error = %v, want error %v", tt.connect, err, tt.err)
			continue
		}
		if !reflect.DeepEqual(servers, tt.servers) || chroot != tt.chroot {
			t.Errorf("ParseZKConnect(%q) = %v %q, want %v %q", tt.connect, servers, chroot, tt.servers, tt.chroot)
		}
	}
}

func TestValidateName(t *testing.T) {
	for _, ok := range []string{"t", "page-views", "a.b_c-D9", "_schemas"} {
		if err := ValidateName("topic", ok); err != nil {
			t.Errorf("ValidateName(%q) = %v, want nil", ok, err)
		}
	}
	long := make([]byte, 250)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", "ü", string(long)} {
		if err := ValidateName("topic", bad); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", bad)
		}
	}
}

func TestZKPaths(t *testing.T) {
	p := ZKPaths{Root: "/tributary"}
	got := []string{
		p.Broker(3), p.Topic("t"), p.Consumer("g", "c1"), p.Owner("g", "t", 7), p.Offset("g", "t", 7),
	}
	want := []string{
		"/tributary/brokers/ids/3",
		"/tributary/brokers/topics/t",
		"/tributary/consumers/g/ids/c1",
		"/tributary/consumers/g/owners/t/7",
		"/tributary/consumers/g/offsets/t/7",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("paths = %q, want %q", got, want)
	}
	if (ZKPaths{}).BrokerIDs() != "/brokers/ids" {
		t.Fatalf("empty root: %q", (ZKPaths{}).BrokerIDs())
	}
}
