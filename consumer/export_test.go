package consumer

import "github.com/tributary-io/tributary/cluster"

// WithZKOptions lets the external tests dial ZooKeeper their way, e.g. over
// a link they can cut to make the session expire.
func WithZKOptions(cfg Config, opts ...cluster.ZKOption) Config {
	cfg.zkOptions = opts
	return cfg
}
