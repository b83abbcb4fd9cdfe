package cluster

// Client-side broker discovery: how a producer or a tool that was given
// only a ZooKeeper address finds brokers to bootstrap from.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/go-zookeeper/zk"
)

// DiscoverBrokers reads the broker registry once, for clients that only need
// somewhere to start (kgo seeds): the brokers registered right now, sorted by
// id. It waits for ZooKeeper as long as ctx allows.
func DiscoverBrokers(ctx context.Context, connect string, logger *slog.Logger) ([]Broker, error) {
	s, err := DialZooKeeper(ctx, connect, logger)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	ids, _, err := s.Conn.Children(s.Paths.BrokerIDs())
	if err != nil {
		return nil, fmt.Errorf("listing %s: %w", s.Paths.BrokerIDs(), err)
	}
	var brokers []Broker
	for _, id := range ids {
		path := s.Paths.BrokerIDs() + "/" + id
		data, _, err := s.Conn.Get(path)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading broker %s: %w", id, err)
		}
		n, err := DecodeBrokerNode(data)
		if err != nil {
			logger.Warn("skipping unreadable broker registration", "path", path, "err", err)
			continue
		}
		brokers = append(brokers, n.Broker)
	}
	if len(brokers) == 0 {
		return nil, fmt.Errorf("%w under %s (is a broker running with --zookeeper %s?)", ErrNoBrokers, s.Paths.BrokerIDs(), connect)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i].ID < brokers[j].ID })
	return brokers, nil
}
