package warehouse

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/colinmarc/hdfs/v2/hadoopconf"
)

// hadoopConf is a cluster's client configuration as Hadoop's own client
// reads it: the properties of core-site.xml and hdfs-site.xml in one
// directory. A nil hadoopConf is an empty one.
type hadoopConf struct {
	dir   string // where it was read, for messages; "" if none
	props hadoopconf.HadoopConf
}

// loadHadoopConf reads the configuration directory dir, or, when dir is
// empty, HADOOP_CONF_DIR, else $HADOOP_HOME/etc/hadoop, as Hadoop's
// scripts do. A directory named explicitly (by the caller or
// HADOOP_CONF_DIR) must exist; with none named and none found the
// configuration is empty, which is enough for hdfs://host:port URLs.
func loadHadoopConf(dir string) (*hadoopConf, error) {
	named := dir != ""
	if !named {
		if dir = os.Getenv("HADOOP_CONF_DIR"); dir != "" {
			named = true
		} else if home := os.Getenv("HADOOP_HOME"); home != "" {
			dir = filepath.Join(home, "etc", "hadoop")
		}
	}
	if dir == "" {
		return &hadoopConf{}, nil
	}
	if _, err := os.Stat(dir); err != nil {
		if named {
			return nil, fmt.Errorf("the Hadoop configuration directory: %w", err)
		}
		return &hadoopConf{}, nil
	}
	props, err := hadoopconf.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("the Hadoop configuration in %s: %w", dir, err)
	}
	return &hadoopConf{dir: dir, props: props}, nil
}

func (c *hadoopConf) get(key string) string {
	return strings.TrimSpace(c.props[key])
}

// list is a comma-separated property, trimmed, empty items dropped.
func (c *hadoopConf) list(key string) []string {
	var out []string
	for _, v := range strings.Split(c.get(key), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func (c *hadoopConf) where() string {
	if c.dir == "" {
		return "no Hadoop configuration (give --hadoop-conf or set HADOOP_CONF_DIR)"
	}
	return "the Hadoop configuration in " + c.dir
}

// defaultFS is the authority of fs.defaultFS (or the deprecated
// fs.default.name), for hdfs:///path URLs.
func (c *hadoopConf) defaultFS() (string, error) {
	v := c.get("fs.defaultFS")
	if v == "" {
		v = c.get("fs.default.name")
	}
	if v == "" {
		return "", fmt.Errorf("the URL names no NameNode or nameservice (hdfs:///path) and %s sets no fs.defaultFS", c.where())
	}
	host, ok := strings.CutPrefix(v, "hdfs://")
	if !ok {
		return "", fmt.Errorf("fs.defaultFS %q in %s is not an hdfs:// URL", v, c.where())
	}
	host, _, _ = strings.Cut(host, "/")
	if host == "" {
		return "", fmt.Errorf("fs.defaultFS %q in %s names no NameNode", v, c.where())
	}
	return host, nil
}

// namenodes resolves the authority of an hdfs:// URL: a nameservice of
// the configuration (dfs.nameservices, or any dfs.ha.namenodes.NS) gives
// the RPC addresses of its NameNodes, in configuration order; anything
// else is one NameNode's host[:port], 8020 by default.
func (c *hadoopConf) namenodes(authority string) ([]string, error) {
	if ids := c.list("dfs.ha.namenodes." + authority); len(ids) > 0 {
		addrs := make([]string, 0, len(ids))
		for _, id := range ids {
			key := "dfs.namenode.rpc-address." + authority + "." + id
			addr := c.get(key)
			if addr == "" {
				return nil, fmt.Errorf("nameservice %s: %s sets no %s", authority, c.where(), key)
			}
			addrs = append(addrs, addr)
		}
		return addrs, nil
	}
	for _, ns := range c.list("dfs.nameservices") {
		if ns != authority {
			continue
		}
		if addr := c.get("dfs.namenode.rpc-address." + ns); addr != "" {
			return []string{addr}, nil
		}
		return nil, fmt.Errorf("nameservice %s: %s sets neither dfs.ha.namenodes.%s nor dfs.namenode.rpc-address.%s", ns, c.where(), ns, ns)
	}
	host, port, err := net.SplitHostPort(authority)
	if err != nil {
		host, port = authority, "8020"
	}
	if host == "" {
		return nil, fmt.Errorf("no NameNode host in %q", authority)
	}
	return []string{net.JoinHostPort(host, port)}, nil
}
