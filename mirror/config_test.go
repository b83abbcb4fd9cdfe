package mirror

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/producer"
)

func TestConfigErrors(t *testing.T) {
	ok := func() Config {
		return Config{Sources: []Source{{Name: "dc1", ZooKeeper: "127.0.0.1:2181/tributary"}}, Target: []string{"127.0.0.1:9092"}}
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string // in the error; "" means valid
	}{
		{"valid", func(*Config) {}, ""},
		{"no source", func(c *Config) { c.Sources = nil }, "no source cluster"},
		{"no target", func(c *Config) { c.Target = nil }, "no target brokers"},
		{"topics regexp", func(c *Config) { c.Topics = "page(views" }, `--topics "page(views" is not a valid regular expression`},
		{"exclude regexp", func(c *Config) { c.Exclude = "[" }, `--exclude "[" is not a valid regular expression`},
		{"duplicate source", func(c *Config) { c.Sources = append(c.Sources, c.Sources[0]) }, `source "dc1" is given twice`},
		{"source named like the target", func(c *Config) { c.TargetName = "dc1" }, "has the target's name"},
		{"bad name", func(c *Config) { c.Sources[0].Name = "dc 1" }, `source name "dc 1"`},
		{"no brokers", func(c *Config) { c.Sources[0].ZooKeeper = "" }, "give its brokers"},
		{"brokers and ZooKeeper", func(c *Config) { c.Sources[0].Bootstrap = []string{"k:9092"} }, "not both"},
		{"bootstrap", func(c *Config) { c.Sources[0].ZooKeeper, c.Sources[0].Bootstrap = "", []string{"k:9092"} }, ""},
		{"rename without topic", func(c *Config) { c.Rename = "{source}" }, "must contain {topic}"},
		{"registry without target registry", func(c *Config) { c.Sources[0].Registry = "http://r:8081" }, "no target registry"},
		{"registry not a URL", func(c *Config) { c.Sources[0].Registry = "r:8081"; c.TargetRegistry = "http://t:8081" }, "not an http(s) URL"},
		{"bad group", func(c *Config) { c.Group = "a/b" }, "group"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := ok()
			tc.edit(&c)
			_, err := New(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTopicSelection(t *testing.T) {
	c, err := Config{Sources: []Source{{Name: "a", ZooKeeper: "h:1/x"}}, Target: []string{"t:1"}, Topics: "pageviews|clicks"}.compile()
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"pageviews": true, "clicks-eu": true, "_schemas": false, "orders": false} {
		if got := c.selects(topic); got != want {
			t.Errorf("selects(%q) = %v, want %v", topic, got, want)
		}
	}
}

func TestParseSource(t *testing.T) {
	s, err := ParseSource("dc1=zk1:2181,zk2:2181/tributary")
	if err != nil || s.Name != "dc1" || s.ZooKeeper != "zk1:2181,zk2:2181/tributary" {
		t.Fatalf("got %+v, %v", s, err)
	}
	s, err = ParseSource("dc1=kafka1:9092, kafka2:9092")
	if err != nil || s.Name != "dc1" || s.ZooKeeper != "" || len(s.Bootstrap) != 2 || s.Bootstrap[1] != "kafka2:9092" {
		t.Fatalf("got %+v, %v", s, err)
	}
	for _, bad := range []string{"dc1", "=zk:2181", "dc1="} {
		if _, err := ParseSource(bad); err == nil {
			t.Errorf("ParseSource(%q) accepted", bad)
		}
	}
}

// Placement when partition counts differ: keyed records where the Java
// client puts them, keyless ones by source partition so that one source
// partition stays in order in one target partition.
func TestByKey(t *testing.T) {
	for _, key := range []string{"user-1", "user-2", ""} {
		if got, want := byKey([]byte(key), 7, 4), producer.PartitionForKey([]byte(key), 4); got != want {
			t.Errorf("key %q: partition %d, want %d", key, got, want)
		}
	}
	for sp := int32(0); sp < 12; sp++ {
		if got := byKey(nil, sp, 4); got != sp%4 {
			t.Errorf("keyless from %d: partition %d, want %d", sp, got, sp%4)
		}
	}
}
