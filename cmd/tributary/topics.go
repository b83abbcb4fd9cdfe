package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

func init() {
	register("topics", "create, list, describe or delete topics, elect leaders, move partitions: topics create|list|describe|delete|elect-leaders|reassign|reassignments", runTopics)
}

func runTopics(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New("which action? topics create|list|describe|delete|elect-leaders|reassign|reassignments [flags] [topic ...]")
	}
	action, args := args[0], args[1:]
	fs := newFlags("topics")
	brokers := fs.String("brokers", "127.0.0.1:9092", "comma-separated broker addresses")
	partitions := fs.Int("partitions", 1, "partitions of a new topic (create)")
	rf := fs.Int("replication-factor", 1, "brokers that store each partition of a new topic (create; more than 1 needs a cluster; -1: the brokers' default)")
	var configs multiFlag
	fs.Var(&configs, "config", "topic config `key=value` for create, repeatable (retention.ms, segment.bytes, ...)")
	var rf2 replicaFlags
	rf2.register(fs)
	var sec clientFlags
	sec.register(fs, false)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cl, err := sec.newKafkaClient(kgo.SeedBrokers(splitList(*brokers)...))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	names := fs.Args()
	switch action {
	case "create":
		if len(names) == 0 {
			return errors.New("name the topic to create: topics create --partitions 12 pageviews")
		}
		cfg := map[string]*string{}
		for _, kv := range configs {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("--config %q: want key=value", kv)
			}
			cfg[k] = &v
		}
		resps, err := adm.CreateTopics(ctx, int32(*partitions), int16(*rf), cfg, names...)
		if err != nil {
			return err
		}
		var failed error
		for _, r := range resps.Sorted() {
			if r.Err != nil {
				failed = errors.Join(failed, fmt.Errorf("topic %s: %v: %s", r.Topic, r.Err, r.ErrMessage))
				continue
			}
			fmt.Printf("created topic %s with %d partitions\n", r.Topic, r.NumPartitions)
		}
		return failed
	case "delete":
		if len(names) == 0 {
			return errors.New("name the topic to delete")
		}
		resps, err := adm.DeleteTopics(ctx, names...)
		if err != nil {
			return err
		}
		var failed error
		for _, r := range resps.Sorted() {
			if r.Err != nil {
				failed = errors.Join(failed, fmt.Errorf("topic %s: %v", r.Topic, r.Err))
				continue
			}
			fmt.Printf("deleted topic %s\n", r.Topic)
		}
		return failed
	case "list":
		details, err := adm.ListTopics(ctx, names...)
		if err != nil {
			return err
		}
		for _, t := range details.Sorted() {
			fmt.Printf("%s\t%d partitions\n", t.Topic, len(t.Partitions))
		}
		return nil
	case "describe":
		return describeTopics(ctx, adm, names)
	case "elect-leaders":
		return electLeaders(ctx, adm, rf2)
	case "reassign":
		return reassign(ctx, cl, adm, rf2)
	case "reassignments":
		return listReassignments(ctx, cl)
	}
	return fmt.Errorf("unknown action %q: use create, list, describe, delete, elect-leaders, reassign or reassignments", action)
}

func describeTopics(ctx context.Context, adm *kadm.Client, names []string) error {
	details, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return err
	}
	if err := details.Error(); err != nil {
		return err
	}
	starts, err := adm.ListStartOffsets(ctx, details.Names()...)
	if err != nil {
		return err
	}
	ends, err := adm.ListEndOffsets(ctx, details.Names()...)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "TOPIC\tPARTITION\tLEADER\tSTART\tEND\tMESSAGES")
	for _, t := range details.Sorted() {
		ps := t.Partitions.Sorted()
		sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
		for _, p := range ps {
			s, _ := starts.Lookup(t.Topic, p.Partition)
			e, _ := ends.Lookup(t.Topic, p.Partition)
			fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\t%d\n", t.Topic, p.Partition, p.Leader, s.Offset, e.Offset, e.Offset-s.Offset)
		}
	}
	return w.Flush()
}

// multiFlag collects a repeatable flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
